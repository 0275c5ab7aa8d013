package watch

import "strings"

// dangerousNames lists, per section, the variable names that make git run a program, load more
// configuration, redirect where git reads or writes on the host, or send credentials or traffic
// elsewhere. "*" means every variable of the section. A subsection is ignored on purpose: [core
// "x"] hooksPath is not core.hooksPath to git, but nobody writes it for a good reason, so it is
// reported too. How the list was made is in the package doc.
var dangerousNames = map[string][]string{
	// run a program on ordinary git commands; and core.worktree, excludesFile and attributesFile,
	// which redirect where git reads or writes (below)
	"core": {"hookspath", "fsmonitor", "sshcommand", "pager", "editor", "askpass", "gitproxy", "alternaterefscommand",
		"worktree", "excludesfile", "attributesfile"},
	"sequence":    {"editor"},
	"diff":        {"external", "textconv", "command"},
	"difftool":    {"cmd", "path"},
	"mergetool":   {"cmd", "path"},
	"merge":       {"driver"},
	"filter":      {"clean", "smudge", "process"},
	"gpg":         {"program", "defaultkeycommand", "allowedsignersfile"}, // gpg.ssh.defaultKeyCommand runs when a commit is signed with ssh and no key is set
	"interactive": {"difffilter"},
	"man":         {"cmd", "path"},
	"guitool":     {"cmd"},
	"instaweb":    {"httpd", "browser", "modulepath"},
	"imap":        {"tunnel"},
	"trailer":     {"cmd", "command"},
	"pager":       {"*"},
	"alias":       {"*"},
	"submodule":   {"update"},
	"remote":      {"uploadpack", "receivepack", "vcs", "proxy", "lfsurl", "lfspushurl"},
	"uploadpack":  {"packobjectshook"},
	"browser":     {"cmd", "path"},
	"web":         {"browser"},
	"sendemail":   {"smtpserver", "tocmd", "cccmd", "sendmailcmd"},
	"init":        {"templatedir"}, // hooks copied into every repository git init and clone make
	// load configuration from elsewhere
	"include":    {"path"},
	"includeif":  {"*"},
	"extensions": {"worktreeconfig"}, // every worktree's config.worktree is read
	// redirect where git reads or writes on the host (core.worktree: checkout and reset write
	// there; excludesFile: what git status hides; attributesFile: which filters and drivers
	// apply; commit.template and format.signatureFile: a file read into what is committed or
	// mailed; format.outputDirectory: where format-patch writes; gpg.ssh.allowedSignersFile:
	// which keys verification trusts; http.cookieFile: a file read and, with saveCookies,
	// written)
	"commit": {"template"},
	"format": {"signaturefile", "outputdirectory"},
	// hand credentials or traffic to someone else
	"credential": {"*"},
	"url":        {"insteadof", "pushinsteadof"},
	"protocol":   {"allow"},
	// http.sslVerify=false and http.sslCAInfo or sslCAPath naming the agent's CA let a machine
	// in the middle read what fetch and push send, credentials included; sslCert and sslKey
	// name files git reads and sends
	"http": {"proxy", "cookiefile", "curloptresolve", "sslverify", "sslcainfo", "sslcapath", "sslcert", "sslkey"},
	// status.showUntrackedFiles=no hides from git status the files the agent leaves
	"status": {"showuntrackedfiles"},

	// Keys of other documentation than git-config(1), read by git or by tools git runs:
	//
	// git-archive(1): tar.<format>.command runs for `git archive --format=<format>` and for
	// -o x.<format>
	"tar": {"command"},
	// git-svn(1): svn.authorsProg runs for each author of the commits git svn fetches
	"svn": {"authorsprog"},
	// git-lfs-config(5), read by the git-lfs filter most users configure globally: lfs.url and
	// lfs.pushurl (remote.<name>.lfsurl and lfspushurl, below) receive the user's credentials,
	// lfs.standalonetransferagent and every lfs.customtransfer.<name>.* run a program on every
	// LFS download and upload, lfs.extension.<name>.* run clean and smudge commands, and
	// lfs.storage moves where LFS writes its objects ([lfsRuns])
	"lfs": {"url", "pushurl", "standalonetransferagent", "storage"},
}

// lfsRuns reports whether an lfs.<subsection>.<name> key is one of git-lfs-config(5)'s that run a
// program: every variable of lfs.customtransfer.<name> and lfs.extension.<name>.
func lfsRuns(section, sub string) bool {
	sub = strings.ToLower(sub)
	return section == "lfs" && (strings.HasPrefix(sub, "customtransfer.") || strings.HasPrefix(sub, "extension."))
}

// Dangerous reports whether a config entry makes git, or a tool git runs (git-lfs), run code,
// include other configuration,
// redirect where it reads or writes, or send credentials elsewhere: the keys git-tamper
// baselines. Keys are matched on their section and variable name, case-insensitively; a remote
// or submodule URL is dangerous when git would run something on this machine for it
// (urlRunsHere). A branch's remote and push remote and remote.pushDefault depend on the
// remotes configured beside them, so the config reader judges those, not Dangerous.
func Dangerous(e Entry) bool {
	section, name := strings.ToLower(e.Section()), strings.ToLower(e.Name())
	for _, n := range dangerousNames[section] {
		if n == "*" || n == name {
			return true
		}
	}
	if lfsRuns(section, e.Subsection()) {
		return true
	}
	if (section == "remote" && (name == "url" || name == "pushurl")) || (section == "submodule" && name == "url") {
		return urlRunsHere(e.Value)
	}
	return false
}

// urlRunsHere reports whether git, fetching from or pushing to the URL v, runs something on this
// machine that the URL chooses, as git's transport_get decides (transport.c, connect.c):
//
//   - a local path or a file:// URL: git runs upload-pack or receive-pack in that repository,
//     and receive-pack runs its hooks (pre-receive, update, post-receive) — a repository the
//     agent made in the workspace;
//   - <transport>::<address>: git runs the helper git-remote-<transport> (ext:: runs a command
//     outright);
//   - <scheme>://… for a scheme git has no transport of its own for: git runs the helper
//     git-remote-<scheme>.
//
// git's own network transports (http, https, ftp, ftps, git, ssh) and the scp-like host:path
// form are not: what they reach is elsewhere.
func urlRunsHere(v string) bool {
	v = strings.TrimSpace(v)
	if v == "" {
		return false
	}
	if i := strings.Index(v, "::"); i > 0 && isTransportName(v[:i]) {
		return true
	}
	if scheme, _, ok := strings.Cut(v, "://"); ok && isTransportName(scheme) {
		switch strings.ToLower(scheme) {
		case "http", "https", "ftp", "ftps", "git", "ssh", "git+ssh", "ssh+git":
			return false
		}
		return true // file://, or a helper's scheme
	}
	colon, slash := strings.IndexByte(v, ':'), strings.IndexByte(v, '/')
	return colon < 0 || (slash >= 0 && slash < colon) // url_is_local_not_ssh
}

// isTransportName reports whether s is a name git takes for a transport: letters, digits, "+",
// "-" and ".".
func isTransportName(s string) bool {
	for _, c := range s {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '+' || c == '-' || c == '.') {
			return false
		}
	}
	return s != ""
}

// isRemoteSelector reports whether e names the remote git pushes to or fetches from:
// branch.<name>.remote, branch.<name>.pushRemote, remote.pushDefault. git takes a value that
// is no configured remote for a URL.
func isRemoteSelector(e Entry) bool {
	section, name, sub := strings.ToLower(e.Section()), strings.ToLower(e.Name()), e.Subsection()
	return (section == "branch" && sub != "" && (name == "remote" || name == "pushremote")) ||
		(section == "remote" && sub == "" && name == "pushdefault")
}

// definesRemote reports whether e makes its subsection a remote git knows by name
// (remote.<name>.url or remote.<name>.vcs), and returns that name.
func definesRemote(e Entry) (string, bool) {
	name := strings.ToLower(e.Name())
	if strings.ToLower(e.Section()) != "remote" || e.Subsection() == "" || (name != "url" && name != "vcs") {
		return "", false
	}
	return e.Subsection(), true
}

// selectorRunsHere reports whether a remote selector's value v leads git to run something on
// this machine: "." is the repository itself, a remote in remotes is judged by its own URLs,
// and anything else is a URL to git ([urlRunsHere]) — a bare name that is no remote is a
// relative path.
func selectorRunsHere(v string, remotes map[string]bool) bool {
	v = strings.TrimSpace(v)
	return v != "." && !remotes[v] && urlRunsHere(v)
}

// isInclude reports whether e names another config file git reads: include.path or
// includeIf.<condition>.path.
func isInclude(e Entry) bool {
	s := e.Section()
	return (s == "include" || s == "includeif") && e.Name() == "path" && !e.NoValue
}
