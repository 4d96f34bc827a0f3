package policy

import "sort"

// CodeRunningFlags lists options of common tools that make them run other
// programs or code, or write files they were not asked to, whatever the
// allowed subcommand: an allow rule for "git diff" still lets
// "git diff --ext-diff" run a configured program. Deny rules match their
// tokens anywhere in the arguments (and "--flag=value" forms), so adding
// them next to an allow rule closes these doors.
var CodeRunningFlags = map[string][][]string{
	"git": {{"-c"}, {"--config-env"}, {"--exec-path"}, {"--output"}, {"--ext-diff"},
		{"--upload-pack"}, {"--receive-pack"}, {"--exec"}, {"difftool"}, {"mergetool"},
		{"--open-files-in-pager"}, {"-O"}},
	"rg":    {{"--pre"}, {"--search-zip"}, {"-z"}},
	"tar":   {{"--to-command"}, {"--checkpoint-action"}, {"--use-compress-program"}, {"-I"}, {"--info-script"}, {"--new-volume-script"}},
	"rsync": {{"-e"}, {"--rsh"}, {"--rsync-path"}},
	"ssh":   {{"-o"}, {"-F"}},
	"less":  {{"-k"}},
	"zip":   {{"-TT"}, {"--unzip-command"}},
	"sort":  {{"--compress-program"}},
}

// CodeRunningFlagRules returns deny rules for CodeRunningFlags, for the
// programs found in path (DefaultExecPath when nil); missing programs are
// skipped so the rules always build. Their Source is "builtin".
func CodeRunningFlagRules(path []string) []ExecRule {
	if path == nil {
		path = DefaultExecPath
	}
	progs := make([]string, 0, len(CodeRunningFlags))
	for prog := range CodeRunningFlags {
		progs = append(progs, prog)
	}
	sort.Strings(progs)
	var out []ExecRule
	for _, prog := range progs {
		if _, err := LookPath(prog, path); err != nil {
			continue
		}
		for _, args := range CodeRunningFlags[prog] {
			out = append(out, ExecRule{Program: prog, Args: args, Deny: true, Source: "builtin"})
		}
	}
	return out
}
