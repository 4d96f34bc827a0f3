package policy

import (
	"strings"
)

// injectionPrefixes and injectionNames are variables that make a program
// load or run code it was not asked to: loaders, interpreters, shells, git,
// editors and pagers.
var injectionPrefixes = []string{
	"LD_", "DYLD_", "PYTHON", "PERL5", "PERL_", "RUBY", "GEM_", "BUNDLE_", "NODE_", "NPM_CONFIG_",
	"GIT_CONFIG", "GIT_SSH", "BASH_FUNC_", "JAVA_", "_JAVA_", "JDK_JAVA_", "MALLOC_", "LUA_",
	"CARGO_", "RUSTC_", "GO", "CGO_", "PIP_", "UV_", "CONDA", "VIRTUAL_ENV",
}

var injectionNames = set(
	"BASH_ENV", "ENV", "SHELLOPTS", "BASHOPTS", "PS4", "PROMPT_COMMAND", "IFS", "CDPATH",
	"GLOBIGNORE", "ZDOTDIR", "PERLLIB", "CLASSPATH", "GCONV_PATH", "GLIBC_TUNABLES", "LOCPATH",
	"NLSPATH", "HOSTALIASES", "RESOLV_HOST_CONF", "RES_OPTIONS", "TZDIR",
	"GIT_EXEC_PATH", "GIT_ASKPASS", "SSH_ASKPASS", "GIT_EXTERNAL_DIFF", "GIT_PAGER", "GIT_EDITOR",
	"GIT_DIR", "GIT_WORK_TREE", "GIT_TEMPLATE_DIR", "GIT_PROXY_COMMAND", "GIT_SEQUENCE_EDITOR",
	"GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_CEILING_DIRECTORIES",
	"PAGER", "EDITOR", "VISUAL", "BROWSER", "LESSOPEN", "LESSCLOSE", "MANPAGER", "MANOPT",
	"XDG_CONFIG_HOME", "XDG_CONFIG_DIRS", "XDG_DATA_HOME", "XDG_DATA_DIRS",
	"SSL_CERT_FILE", "SSL_CERT_DIR", "CURL_CA_BUNDLE", "REQUESTS_CA_BUNDLE", "CURL_HOME", "WGETRC",
	"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "all_proxy", "no_proxy",
	"MAKEFLAGS", "MFLAGS", "MAKEFILES", "CC", "CXX", "CFLAGS", "CXXFLAGS", "LDFLAGS", "CPPFLAGS",
	"TMUX", "SHELL", "HISTFILE", "INPUTRC", "TERMINFO", "TERMINFO_DIRS", "SUDO_ASKPASS", "OPENSSL_CONF",
	"KUBECONFIG", "DOCKER_HOST", "DOCKER_CONFIG",
)

// secretWords mark secret-looking names, matched case-insensitively
// anywhere in the name.
var secretWords = []string{"TOKEN", "SECRET", "KEY", "PASSWORD", "PASSWD", "PASSPHRASE", "CREDENTIAL",
	"AUTH", "COOKIE", "SESSION", "PRIVATE", "API_"}

// IsInjectionVar reports whether a variable changes what code a child loads
// or runs (LD_PRELOAD, BASH_ENV, PYTHONPATH, NODE_OPTIONS, GIT_SSH_COMMAND...).
func IsInjectionVar(name string) bool {
	if injectionNames[name] {
		return true
	}
	for _, p := range injectionPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// IsSecretVar reports whether a variable's name looks like it holds a
// secret (*TOKEN*, *SECRET*, *KEY*, *PASSWORD*, ...), ignoring case.
func IsSecretVar(name string) bool {
	up := strings.ToUpper(name)
	for _, w := range secretWords {
		if strings.Contains(up, w) {
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
// LANG and TERM, plus variables the host allows (ExecSpec.Env) or the
// caller set, minus loader, interpreter and secret-looking variables that
// no rule names. dropped lists the names removed.
func (p *Policy) ExecEnv(in ExecEnvInput) (env, dropped []string) {
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
	if in.Set == nil {
		for _, kv := range in.Host {
			k, v, _ := strings.Cut(kv, "=")
			if reserved(k) || !p.envNamed(k, in.Rules, false) || !p.envPasses(k, in.Rules) {
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
