package policy

// DefaultProtected is the built-in write-deny list. Entries without a leading
// "/" or "~" are name patterns matched at any depth, case-insensitively, even
// before the path exists: ".git/hooks" protects every repository's hooks
// directory and everything under it. "*" may open or close a single-component
// pattern (".env.*", "*.pem").
//
// The list covers what makes a later, unguarded program run code or leak
// credentials on the agent's behalf: shell start-up files, git's config and
// hooks, SSH, cloud and package-manager credentials, editor and agent
// configuration.
var DefaultProtected = []string{
	// Shell and login start-up files.
	".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile",
	".zshrc", ".zshenv", ".zprofile", ".zlogin", ".zlogout",
	".kshrc", ".cshrc", ".tcshrc", ".inputrc", ".config/fish",
	// Git: configuration and hooks run code on the next git command.
	".gitconfig", ".gitmodules", ".git/config", ".git/hooks", ".config/git",
	// Credentials.
	".ssh", ".gnupg", ".aws", ".azure", ".config/gcloud", ".kube", ".docker",
	".netrc", ".npmrc", ".pypirc", ".git-credentials", ".pgpass",
	".env", ".env.*", "*.pem", "*.key", "id_rsa", "id_ed25519", "id_ecdsa",
	// Editors and agents: settings that run tools or change what an agent may do.
	".vscode", ".idea", ".mcp.json", ".claude", ".codex", ".cursor", ".gemini",
	".aider.conf.yml", ".continue",
}

// systemWriteDeny are trees no guarded call may write, whatever the roots
// say: kernel interfaces where a write is a configuration change.
var systemWriteDeny = []string{"/proc", "/sys"}
