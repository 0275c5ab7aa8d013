package watch

import "strings"

// dangerousNames lists, per section, the variable names that make git run a program, load more
// configuration, or send credentials or traffic elsewhere. "*" means every variable of the
// section. A subsection is ignored on purpose: [core "x"] hooksPath is not core.hooksPath to
// git, but nobody writes it for a good reason, so it is reported too.
var dangerousNames = map[string][]string{
	// run a program on ordinary git commands
	"core":        {"hookspath", "fsmonitor", "sshcommand", "pager", "editor", "askpass", "gitproxy", "alternaterefscommand"},
	"sequence":    {"editor"},
	"diff":        {"external", "textconv", "command"},
	"difftool":    {"cmd", "path"},
	"mergetool":   {"cmd", "path"},
	"merge":       {"driver"},
	"filter":      {"clean", "smudge", "process"},
	"gpg":         {"program", "defaultkeycommand"}, // gpg.ssh.defaultKeyCommand runs when a commit is signed with ssh and no key is set
	"interactive": {"difffilter"},
	"man":         {"cmd", "path"},
	"guitool":     {"cmd"},
	"instaweb":    {"httpd"},
	"imap":        {"tunnel"},
	"trailer":     {"cmd", "command"},
	"pager":       {"*"},
	"alias":       {"*"},
	"submodule":   {"update"},
	"remote":      {"uploadpack", "receivepack", "vcs"},
	"uploadpack":  {"packobjectshook"},
	"browser":     {"cmd", "path"},
	"web":         {"browser"},
	"sendemail":   {"smtpserver", "tocmd", "cccmd", "sendmailcmd"},
	// load configuration from elsewhere
	"include":   {"path"},
	"includeif": {"*"},
	// hand credentials or traffic to someone else
	"credential": {"*"},
	"url":        {"insteadof", "pushinsteadof"},
	"protocol":   {"allow"},
}

// Dangerous reports whether a config entry makes git run code, include other configuration, or
// redirect credentials: the keys git-tamper baselines. Keys are matched on their section and
// variable name, case-insensitively; a remote URL is dangerous only when it names a transport
// that runs a command (ext::, fd::).
func Dangerous(e Entry) bool {
	section, name := strings.ToLower(e.Section()), strings.ToLower(e.Name())
	for _, n := range dangerousNames[section] {
		if n == "*" || n == name {
			return true
		}
	}
	if section == "remote" && (name == "url" || name == "pushurl") {
		v := strings.ToLower(strings.TrimSpace(e.Value))
		return strings.HasPrefix(v, "ext::") || strings.HasPrefix(v, "fd::")
	}
	return false
}

// isInclude reports whether e names another config file git reads: include.path or
// includeIf.<condition>.path.
func isInclude(e Entry) bool {
	s := e.Section()
	return (s == "include" || s == "includeif") && e.Name() == "path" && !e.NoValue
}
