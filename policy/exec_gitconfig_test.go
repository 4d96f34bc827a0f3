package policy_test

import (
	"strings"
	"testing"

	"github.com/auditguard/auditguard/policy"
)

// TestGitGrammar: git's own options are read before the command word and
// each command's options after it, and a configuration key given on the
// command line is judged by its family. The argv are real command lines
// (git 2.39); nothing runs.
func TestGitGrammar(t *testing.T) {
	p := allowAll(t, "git")
	git, err := policy.LookPath("git", policy.DefaultExecPath)
	if err != nil {
		t.Skip("git is not installed")
	}
	tests := []struct {
		argv    []string
		allowed bool
		rule    string // part of the deciding rule's pattern when denied
	}{
		// Global options vs the command's own.
		{[]string{"git", "grep", "-c", "word"}, true, ""},
		{[]string{"git", "grep", "--count", "word"}, true, ""},
		{[]string{"git", "log", "-c"}, true, ""},
		{[]string{"git", "commit", "-c", "HEAD"}, true, ""},
		{[]string{"git", "help", "-c"}, true, ""},
		{[]string{"git", "-C", "sub", "grep", "-c", "x"}, true, ""},
		// Harmless identity and presentation keys.
		{[]string{"git", "-c", "user.name=A", "-c", "user.email=a@b", "commit", "-m", "x"}, true, ""},
		{[]string{"git", "-c", "User.Name=A", "commit"}, true, ""},
		{[]string{"git", "-c", "init.defaultBranch=main", "init"}, true, ""},
		{[]string{"git", "-c", "color.ui=never", "-c", "color.pager=false", "log"}, true, ""},
		{[]string{"git", "-c", "core.autocrlf=false", "-c", "core.quotePath=off", "status"}, true, ""},
		{[]string{"git", "-c", "advice.detachedHead=false", "checkout", "HEAD~1"}, true, ""},
		{[]string{"git", "--config-env=user.name=AUTHOR", "commit"}, true, ""},
		{[]string{"git", "--config-env", "user.email=EMAIL", "commit"}, true, ""},
		{[]string{"git", "clone", "-c", "user.name=A", "src", "dst"}, true, ""},
		{[]string{"git", "clone", "--config=user.name=A", "src", "dst"}, true, ""},
		{[]string{"git", "clone", "--conf", "user.name=A", "src", "dst"}, true, ""},
		{[]string{"git", "-c", "nosection", "status"}, true, ""}, // git refuses it itself
		// Every dangerous family, in the spellings git reads.
		{[]string{"git", "-c", "core.fsmonitor=./x", "status"}, false, "core.fsmonitor"},
		{[]string{"git", "-c", "CORE.FSMONITOR=./x", "status"}, false, "core.fsmonitor"},
		{[]string{"git", "-c", "core.pager=sh", "log"}, false, "core.pager"},
		{[]string{"git", "-c", "pager.log=sh", "log"}, false, "pager.*"},
		{[]string{"git", "-c", "core.editor=sh", "commit"}, false, "*.editor"},
		{[]string{"git", "-c", "sequence.editor=sh", "rebase", "main"}, false, "*.editor"},
		{[]string{"git", "-c", "core.sshCommand=sh", "fetch"}, false, "*.sshcommand"},
		{[]string{"git", "-c", "core.hooksPath=/tmp/h", "commit"}, false, "core.hookspath"},
		{[]string{"git", "-c", "core.askPass=./x", "fetch"}, false, "core.askpass"},
		{[]string{"git", "-c", "core.gitProxy=./x", "fetch"}, false, "core.gitproxy"},
		{[]string{"git", "-c", "core.alternateRefsCommand=./x", "fetch"}, false, "core.alternaterefscommand"},
		{[]string{"git", "-c", "core.attributesFile=/tmp/a", "diff"}, false, "core.attributesfile"},
		{[]string{"git", "-c", "alias.st=!sh", "st"}, false, "alias.*"},
		{[]string{"git", "-c", "credential.helper=!sh", "fetch"}, false, "*.helper"},
		{[]string{"git", "-c", "credential.https://x.helper=!sh", "fetch"}, false, "*.helper"},
		{[]string{"git", "-c", "diff.pdf.textconv=sh", "diff"}, false, "*.textconv"},
		{[]string{"git", "-c", "diff.pdf.command=sh", "diff"}, false, "*.command"},
		{[]string{"git", "-c", "diff.external=sh", "diff"}, false, "diff.external"},
		{[]string{"git", "-c", "trailer.sign.cmd=sh", "commit"}, false, "*.cmd"},
		{[]string{"git", "-c", "include.path=/tmp/c", "status"}, false, "*.path"},
		{[]string{"git", "-c", "includeIf.gitdir:/x/.path=/tmp/c", "status"}, false, "*.path"},
		{[]string{"git", "-c", "gpg.program=sh", "commit", "-S"}, false, "*.program"},
		{[]string{"git", "-c", "gpg.ssh.defaultKeyCommand=sh", "commit"}, false, "gpg.*"},
		{[]string{"git", "-c", "merge.x.driver=sh", "merge", "b"}, false, "*.driver"},
		{[]string{"git", "-c", "filter.lfs.smudge=sh", "checkout", "."}, false, "filter.*"},
		{[]string{"git", "-c", "filter.lfs.process=sh", "checkout", "."}, false, "filter.*"},
		{[]string{"git", "-c", "interactive.diffFilter=sh", "add", "-p"}, false, "interactive.difffilter"},
		{[]string{"git", "-c", "sendemail.sendmailCmd=sh", "status"}, false, "sendemail.*"},
		{[]string{"git", "-c", "imap.tunnel=sh", "status"}, false, "imap.tunnel"},
		{[]string{"git", "-c", "web.browser=sh", "status"}, false, "web.browser"},
		{[]string{"git", "-c", "difftool.x.cmd=sh", "status"}, false, "*.cmd"},
		{[]string{"git", "-c", "mergetool.keepBackup=false", "status"}, false, "mergetool.*"},
		{[]string{"git", "-c", "remote.origin.uploadpack=sh", "fetch"}, false, "remote.uploadpack"},
		{[]string{"git", "-c", "remote.origin.receivepack=sh", "push"}, false, "remote.receivepack"},
		{[]string{"git", "-c", "remote.origin.vcs=x", "fetch"}, false, "remote.vcs"},
		{[]string{"git", "-c", "protocol.ext.allow=always", "fetch"}, false, "protocol.*"},
		{[]string{"git", "-c", "protocol.allow=always", "fetch"}, false, "protocol.*"},
		{[]string{"git", "-c", "submodule.x.update=!sh", "submodule", "update"}, false, "submodule.update"},
		{[]string{"git", "-c", "uploadpack.packObjectsHook=sh", "status"}, false, "uploadpack.packobjectshook"},
		{[]string{"git", "-c", "init.templateDir=/tmp/t", "init"}, false, "init.templatedir"},
		{[]string{"git", "-c", "safe.directory=*", "status"}, false, "safe.directory"},
		{[]string{"git", "-c", "core.pager", "log"}, false, "core.pager"}, // KEY alone means true
		{[]string{"git", "-c", "user.name=A", "-c", "core.pager=sh", "log"}, false, "core.pager"},
		{[]string{"git", "--config-env=core.pager=PAGER", "log"}, false, "core.pager"},
		{[]string{"git", "--config-env", "alias.x=CMD", "x"}, false, "alias.*"},
		{[]string{"git", "clone", "-c", "core.fsmonitor=sh", "src", "dst"}, false, "core.fsmonitor"},
		{[]string{"git", "clone", "-ccore.fsmonitor=sh", "src", "dst"}, false, "core.fsmonitor"},
		{[]string{"git", "clone", "-qc", "core.fsmonitor=sh", "src", "dst"}, false, "core.fsmonitor"},
		{[]string{"git", "clone", "--config=core.fsmonitor=sh", "src", "dst"}, false, "core.fsmonitor"},
		{[]string{"git", "clone", "--conf", "core.fsmonitor=sh", "src", "dst"}, false, "core.fsmonitor"},
		// Spellings git does not read as -c are refused too (git fails on them).
		{[]string{"git", "-cuser.name=A", "status"}, false, "git -c"},
		// Other global options keep their denials.
		{[]string{"git", "--exec-path=/tmp", "status"}, false, "--exec-path"},
		{[]string{"git", "--git-dir=/tmp/x", "status"}, false, "--git-dir"},
	}
	for _, tc := range tests {
		name := strings.Join(tc.argv, " ")
		t.Run(name, func(t *testing.T) {
			d := p.CheckExec(git, tc.argv)
			if d.Allowed != tc.allowed {
				t.Fatalf("allowed = %v, want %v (%v)", d.Allowed, tc.allowed, d)
			}
			if !tc.allowed {
				if d.Tier != policy.TierHard {
					t.Errorf("tier %v, want hard", d.Tier)
				}
				if !strings.Contains(d.Rule.Pattern, tc.rule) {
					t.Errorf("rule %q, want one naming %q", d.Rule.Pattern, tc.rule)
				}
			}
		})
	}
}

// TestGitConfigRisksHaveSources: every family names its manual.
func TestGitConfigRisksHaveSources(t *testing.T) {
	for _, g := range policy.GitConfigRisks() {
		if g.Source == "" || g.Why == "" || !(g.Risk == policy.RiskRuns || g.Risk == policy.RiskConfig) {
			t.Errorf("%s: source %q, why %q, risk %v", g.Key(), g.Source, g.Why, g.Risk)
		}
	}
}
