package policy

import (
	"strings"
)

// EnvRisk is one entry of the table of variables that make a program load
// or run code it was not asked to, or read configuration, certificates or
// proxies from elsewhere. Names are matched ignoring case: tools read
// lower-case spellings too (npm_config_*, http_proxy).
type EnvRisk struct {
	Name   string // a whole name, or a prefix ending in "*", or a suffix starting with "*"
	Source string // the manual that documents it
}

// envRisks is the table. A prefix "GIT_*" with gitSafeVars is stricter than
// listing git(1)'s variables one by one: a variable git adds later is
// refused until it is known to be harmless.
var envRisks = []EnvRisk{
	{"LD_*", "ld.so(8)"}, {"DYLD_*", "dyld(1)"}, {"GCONV_PATH", "iconv_open(3)"}, {"GLIBC_TUNABLES", "ld.so(8)"},
	{"LOCPATH", "locale(7)"}, {"NLSPATH", "catopen(3)"}, {"MALLOC_*", "mallopt(3)"}, {"HOSTALIASES", "hostname(7)"},
	{"RESOLV_HOST_CONF", "resolv.conf(5)"}, {"RES_OPTIONS", "resolv.conf(5)"}, {"TZDIR", "tzset(3)"},
	{"BASH_ENV", "bash(1)"}, {"ENV", "sh(1p)"}, {"BASH_FUNC_*", "bash(1)"}, {"SHELLOPTS", "bash(1)"}, {"BASHOPTS", "bash(1)"},
	{"PS4", "bash(1)"}, {"PROMPT_COMMAND", "bash(1)"}, {"IFS", "bash(1)"}, {"CDPATH", "bash(1)"}, {"GLOBIGNORE", "bash(1)"},
	{"ZDOTDIR", "zsh(1)"}, {"SHELL", "sh(1p)"}, {"HISTFILE", "bash(1)"}, {"INPUTRC", "readline(3)"}, {"TMUX", "tmux(1)"},
	{"PYTHON*", "python(1)"}, {"PERL5*", "perlrun(1)"}, {"PERL_*", "perlrun(1)"}, {"PERLLIB", "perlrun(1)"},
	{"RUBY*", "ruby(1)"}, {"GEM_*", "gem(1)"}, {"BUNDLE_*", "bundle-config(1)"}, {"NODE_*", "node(1)"},
	{"NPM_CONFIG_*", "npm-config(7)"}, {"YARN_*", "yarn config"}, {"JAVA_*", "java(1)"}, {"_JAVA_*", "java(1)"},
	{"JDK_JAVA_*", "java(1)"}, {"CLASSPATH", "java(1)"}, {"LUA_*", "lua(1)"}, {"CARGO_*", "cargo(1)"},
	{"RUSTC_*", "cargo(1)"}, {"RUSTFLAGS", "cargo(1)"}, {"GO*", "go help environment"}, {"CGO_*", "go help environment"},
	{"PIP_*", "pip(1)"}, {"UV_*", "uv docs"}, {"CONDA*", "conda docs"}, {"VIRTUAL_ENV", "venv docs"},
	{"GIT_*", "git(1) ENVIRONMENT VARIABLES (git 2.39), less gitSafeVars"},
	{"SSH_ASKPASS", "ssh(1)"}, {"SUDO_ASKPASS", "sudo(8)"},
	{"PAGER", "environ(7)"}, {"EDITOR", "environ(7)"}, {"VISUAL", "environ(7)"}, {"BROWSER", "environ(7)"},
	{"LESS", "less(1)"}, {"LESSOPEN", "less(1)"}, {"LESSCLOSE", "less(1)"}, {"LESSKEY*", "less(1)"}, {"LESSEDIT", "less(1)"},
	{"MANPAGER", "man(1)"}, {"MANOPT", "man(1)"},
	{"XDG_CONFIG_HOME", "XDG Base Directory"}, {"XDG_CONFIG_DIRS", "XDG Base Directory"},
	{"XDG_DATA_HOME", "XDG Base Directory"}, {"XDG_DATA_DIRS", "XDG Base Directory"},
	{"TAR_OPTIONS", "tar(1) 1.34"}, {"RIPGREP_CONFIG_PATH", "rg(1)"}, {"GREP_OPTIONS", "grep(1)"},
	{"ZIPOPT", "zip(1)"}, {"ZIP", "zip(1)"}, {"UNZIP", "unzip(1)"}, {"UNZIPOPT", "unzip(1)"},
	{"RSYNC_RSH", "rsync(1)"}, {"RSYNC_CONNECT_PROG", "rsync(1)"}, {"RSYNC_PROXY", "rsync(1)"}, {"CVS_RSH", "cvs(1)"},
	{"SSL_CERT_FILE", "openssl-env(7)"}, {"SSL_CERT_DIR", "openssl-env(7)"}, {"OPENSSL_CONF", "openssl-env(7)"},
	{"OPENSSL_*", "openssl-env(7)"}, {"CURL_CA_BUNDLE", "curl(1)"}, {"CURL_HOME", "curl(1)"}, {"WGETRC", "wget(1)"},
	{"REQUESTS_CA_BUNDLE", "requests docs"}, {"AWS_CA_BUNDLE", "aws cli docs"}, {"NIX_SSL_CERT_FILE", "nix docs"},
	{"*_CA_BUNDLE", "convention (curl, requests, aws)"}, {"*_CAINFO", "convention (curl, git)"}, {"*_CAPATH", "convention (curl, git)"},
	{"*_CA_CERTS", "convention (node, httplib2)"}, {"*_PROXY", "curl(1), wget(1) and most HTTP clients"},
	{"*_CONFIG_PATH", "convention (ripgrep, bat)"}, {"*_CONFIG_FILE", "convention"},
	{"MAKEFLAGS", "make(1)"}, {"MFLAGS", "make(1)"}, {"MAKEFILES", "make(1)"}, {"CC", "make(1)"}, {"CXX", "make(1)"},
	{"CFLAGS", "make(1)"}, {"CXXFLAGS", "make(1)"}, {"LDFLAGS", "make(1)"}, {"CPPFLAGS", "make(1)"},
	{"TERMINFO", "terminfo(5)"}, {"TERMINFO_DIRS", "terminfo(5)"},
	{"KUBECONFIG", "kubectl docs"}, {"DOCKER_HOST", "docker(1)"}, {"DOCKER_CONFIG", "docker(1)"},
}

// IsLoaderVar reports whether the dynamic loader reads variable name to
// load code into any program it starts (LD_PRELOAD, LD_AUDIT,
// LD_LIBRARY_PATH and the rest of LD_*, ld.so(8)) or the C library does
// (GCONV_PATH, iconv_open(3)): code that runs with no exec of its own.
func IsLoaderVar(name string) bool {
	return strings.HasPrefix(name, "LD_") || name == "GCONV_PATH"
}

// gitSafeVars are git variables that name an identity or tune output,
// nothing git runs or reads code from (git(1)).
var gitSafeVars = set("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_AUTHOR_DATE", "GIT_COMMITTER_NAME",
	"GIT_COMMITTER_EMAIL", "GIT_COMMITTER_DATE", "GIT_TERMINAL_PROMPT", "GIT_FLUSH", "GIT_MERGE_VERBOSITY",
	"GIT_PAGER_IN_USE", "GIT_PROGRESS_DELAY", "GIT_LITERAL_PATHSPECS", "GIT_GLOB_PATHSPECS",
	"GIT_NOGLOB_PATHSPECS", "GIT_ICASE_PATHSPECS", "GIT_OPTIONAL_LOCKS", "GIT_DEFAULT_HASH")

// envExact, envPrefixes and envSuffixes index envRisks, upper-cased.
var envExact, envPrefixes, envSuffixes = indexEnvRisks()

func indexEnvRisks() (exact map[string]bool, prefixes, suffixes []string) {
	exact = map[string]bool{}
	for _, r := range envRisks {
		n := strings.ToUpper(r.Name)
		switch {
		case strings.HasSuffix(n, "*"):
			prefixes = append(prefixes, strings.TrimSuffix(n, "*"))
		case strings.HasPrefix(n, "*"):
			suffixes = append(suffixes, strings.TrimPrefix(n, "*"))
		default:
			exact[n] = true
		}
	}
	return exact, prefixes, suffixes
}

// EnvRisks returns the table of injection variables with their sources.
func EnvRisks() []EnvRisk { return append([]EnvRisk(nil), envRisks...) }

// secretWords mark secret-looking names, matched case-insensitively
// anywhere in the name.
var secretWords = []string{"TOKEN", "SECRET", "KEY", "PASSWORD", "PASSWD", "PASSPHRASE", "CREDENTIAL",
	"AUTH", "COOKIE", "SESSION", "PRIVATE", "API_"}

// IsInjectionVar reports whether a variable changes what code a child loads
// or runs (LD_PRELOAD, BASH_ENV, PYTHONPATH, NODE_OPTIONS, GIT_SSH_COMMAND...).
// Case is ignored ("npm_config_script_shell", "Http_Proxy").
func IsInjectionVar(name string) bool {
	var buf [64]byte
	up := upper(name, buf[:0])
	if envExact[up] {
		return true
	}
	for _, p := range envPrefixes {
		if strings.HasPrefix(up, p) {
			return p != "GIT_" || !gitSafeVars[up]
		}
	}
	for _, s := range envSuffixes {
		if strings.HasSuffix(up, s) {
			return true
		}
	}
	return false
}

// upper returns name in upper case, using buf when it is long enough.
func upper(name string, buf []byte) string {
	for i := 0; i < len(name); i++ {
		c := name[i]
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		buf = append(buf, c)
	}
	return string(buf)
}

// IsSecretVar reports whether a variable's name looks like it holds a
// secret (*TOKEN*, *SECRET*, *KEY*, *PASSWORD*, ...), ignoring case.
// "AUTH" inside a word "AUTHOR" is not a secret word: GIT_AUTHOR_NAME,
// GIT_AUTHOR_EMAIL and other *_AUTHOR_* names are identities (GIT_COMMITTER_*
// hold none of the words), while GIT_AUTHOR_TOKEN and AUTHORIZATION are
// still secret-looking.
func IsSecretVar(name string) bool {
	up := strings.ToUpper(name)
	for _, w := range secretWords {
		for rest := up; ; {
			i := strings.Index(rest, w)
			if i < 0 {
				break
			}
			if w == "AUTH" && strings.HasPrefix(rest[i:], "AUTHOR") &&
				(len(rest) == i+6 || rest[i+6] == '_') {
				rest = rest[i+len("AUTHOR"):]
				continue
			}
			return true
		}
	}
	return false
}

// ExecEnvInput is what ExecEnv builds a child's environment from.
type ExecEnvInput struct {
	Host []string // the host's environment (os.Environ())
	// Set is the environment the caller asked for (Cmd.Env). nil means
	// "nothing beyond the host-allowed variables", as in os/exec where nil
	// inherits: only variables the policy names are inherited.
	Set  []string
	Home string // HOME for the child
	Tmp  string // TMPDIR for the child
	// Rules are the rules that allowed the command's programs; their Env
	// lists let named variables through.
	Rules []*Rule
}

// ExecEnv returns a child's environment: the policy's PATH, HOME, TMPDIR,
// LANG and TERM, the variables the policy sets (ExecSpec.SetEnv), plus
// variables the host allows (ExecSpec.Env) or the
// caller set, minus loader, interpreter and secret-looking variables that
// no rule names. A variable of Set that holds the host's own value (Set
// built from os.Environ()) is inherited, not set: it passes only as a
// host variable would with a nil Set. dropped lists the names removed.
func (p *Policy) ExecEnv(in ExecEnvInput) (env, dropped []string) {
	if p == nil {
		return nil, nil
	}
	vals := map[string]string{}
	var order []string
	put := func(k, v string) {
		if _, ok := vals[k]; !ok {
			order = append(order, k)
		}
		vals[k] = v
	}
	put("PATH", strings.Join(p.exec.path, ":"))
	put("HOME", in.Home)
	put("TMPDIR", in.Tmp)
	put("LANG", "C.UTF-8")
	put("TERM", "dumb")
	host := map[string]string{}
	for _, kv := range in.Host {
		if k, v, ok := strings.Cut(kv, "="); ok {
			host[k] = v
		}
	}
	for _, k := range []string{"LANG", "TERM", "LC_ALL"} {
		if v, ok := host[k]; ok && v != "" {
			put(k, v)
		}
	}
	reserved := func(k string) bool { return k == "PATH" || k == "HOME" || k == "TMPDIR" }
	// The policy's own variables (ExecSpec.SetEnv, toolchain profiles'
	// caches): they beat the host's; a caller's Cmd.Env may still set
	// them where the policy lets that variable through.
	policySet := map[string]bool{}
	for _, kv := range p.exec.spec.SetEnv {
		k, v, _ := strings.Cut(kv, "=")
		put(k, v)
		policySet[k] = true
	}
	if in.Set == nil {
		for _, kv := range in.Host {
			k, v, _ := strings.Cut(kv, "=")
			if reserved(k) || policySet[k] || !p.envNamed(k, in.Rules, false) {
				continue
			}
			if !p.envPasses(k, in.Rules) {
				// Named by a prefix pattern but injection or secret-looking:
				// reported, so a host sees why a tool misses it.
				dropped = append(dropped, k)
				continue
			}
			put(k, v)
		}
	} else {
		for _, kv := range in.Set {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" || strings.IndexByte(k, 0) >= 0 || strings.IndexByte(v, 0) >= 0 {
				continue
			}
			if reserved(k) {
				continue
			}
			if hv, ok := host[k]; ok && hv == v && !p.envNamed(k, in.Rules, false) && k != "LANG" && k != "TERM" && k != "LC_ALL" {
				// Copied from the host (Env = append(os.Environ(), ...)):
				// inherited only as the policy lets host variables through.
				dropped = append(dropped, k)
				continue
			}
			if !p.envPasses(k, in.Rules) {
				dropped = append(dropped, k)
				continue
			}
			put(k, v)
		}
	}
	env = make([]string, 0, len(order))
	for _, k := range order {
		env = append(env, k+"="+vals[k])
	}
	return env, dropped
}
