package doctor

import (
	"encoding/csv"
	"path"
	"strings"
)

// runArgs is what doctor reads from the options of a `docker run`/`docker create` argv:
// the audited runspec.json, taken literally, flag by flag, in every spelling the docker CLI
// accepts (--flag value, --flag=value, -f value, -fvalue).
type runArgs struct {
	name, network, user string
	runtimes            []string // every --runtime, in order (docker takes the last)
	capAdd, capDrop     []string
	securityOpt         []string
	mounts              []mountArg
	publish             []string // -p values, and "-P" for --publish-all
	privileged          bool
	hostNamespaces      []string // --pid=host and friends
	devices             []string
	volumesFrom         []string
	env                 []string
	sysctls             map[string]string // the last --sysctl of each key wins, as in docker
}

// mountArg is one --mount or -v.
type mountArg struct {
	typ, source, target string
	readOnly            bool
	raw                 string
}

// boolFlags take no value.
var boolFlags = map[string]bool{
	"--detach": true, "-d": true, "--init": true, "--read-only": true, "--privileged": true,
	"--rm": true, "--interactive": true, "-i": true, "--tty": true, "-t": true, "-P": true,
	"--publish-all": true, "--no-healthcheck": true, "--oom-kill-disable": true, "--quiet": true,
	"-q": true, "--sig-proxy": true, "--help": true,
}

// parseRunArgs reads args, which start with the verb ("create", "run", "container create").
func parseRunArgs(args []string) runArgs {
	var r runArgs
	for len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		args = args[1:] // the verb
	}
	for i := 0; i < len(args); i++ {
		flag, value, hasValue := splitFlag(args[i])
		if !strings.HasPrefix(flag, "-") {
			break // the image: options end here
		}
		if boolFlags[flag] || isBoolCluster(flag) {
			r.setBool(flag, value, hasValue)
			continue
		}
		if !hasValue && i+1 < len(args) {
			i++
			value = args[i]
		}
		r.set(flag, value)
	}
	return r
}

// splitFlag splits "--flag=value" and the attached short form "-pVALUE".
func splitFlag(a string) (flag, value string, ok bool) {
	if strings.HasPrefix(a, "--") {
		return strings.Cut(a, "=")
	}
	if len(a) > 2 && a[0] == '-' && !boolFlags[a[:2]] {
		return a[:2], strings.TrimPrefix(a[2:], "="), true
	}
	return a, "", false
}

// isBoolCluster reports whether a short flag is a cluster of boolean ones, such as -dit.
func isBoolCluster(flag string) bool {
	if len(flag) < 3 || flag[0] != '-' || flag[1] == '-' {
		return false
	}
	for _, c := range flag[1:] {
		if !boolFlags["-"+string(c)] {
			return false
		}
	}
	return true
}

func (r *runArgs) setBool(flag, value string, hasValue bool) {
	on := !hasValue || value == "true"
	switch {
	case flag == "--privileged":
		r.privileged = r.privileged || on
	case flag == "-P" || flag == "--publish-all" || (isBoolCluster(flag) && strings.Contains(flag, "P")):
		if on {
			r.publish = append(r.publish, "-P")
		}
	}
}

func (r *runArgs) set(flag, value string) {
	switch flag {
	case "--name":
		r.name = value
	case "--network", "--net":
		r.network = value
	case "--runtime":
		r.runtimes = append(r.runtimes, value)
	case "--user", "-u":
		r.user = value
	case "--cap-add":
		r.capAdd = append(r.capAdd, value)
	case "--cap-drop":
		r.capDrop = append(r.capDrop, value)
	case "--security-opt":
		r.securityOpt = append(r.securityOpt, value)
	case "--mount":
		r.mounts = append(r.mounts, parseMount(value))
	case "--volume", "-v":
		r.mounts = append(r.mounts, parseVolume(value))
	case "--publish", "-p":
		r.publish = append(r.publish, value)
	case "--pid", "--ipc", "--uts", "--userns", "--cgroupns":
		if value == "host" {
			r.hostNamespaces = append(r.hostNamespaces, flag+"="+value)
		}
	case "--device", "--device-cgroup-rule":
		r.devices = append(r.devices, value)
	case "--volumes-from":
		r.volumesFrom = append(r.volumesFrom, value)
	case "--sysctl":
		if k, v, ok := strings.Cut(value, "="); ok {
			if r.sysctls == nil {
				r.sysctls = map[string]string{}
			}
			r.sysctls[k] = v
		}
	case "--env", "-e":
		r.env = append(r.env, value)
	}
}

// parseMount reads a --mount value: CSV of key=value fields, as the docker CLI reads it.
func parseMount(v string) mountArg {
	m := mountArg{typ: "volume", raw: v}
	fields, err := csv.NewReader(strings.NewReader(v)).Read()
	if err != nil {
		fields = strings.Split(v, ",")
	}
	for _, f := range fields {
		k, val, hasVal := strings.Cut(f, "=")
		switch strings.ToLower(k) {
		case "type":
			m.typ = val
		case "source", "src":
			m.source = val
		case "target", "destination", "dst":
			m.target = val
		case "readonly", "ro":
			m.readOnly = !hasVal || val == "true" || val == "1"
		}
	}
	return m
}

// parseVolume reads a -v value: [source:]target[:options].
func parseVolume(v string) mountArg {
	m := mountArg{typ: "volume", raw: v}
	parts := strings.Split(v, ":")
	switch len(parts) {
	case 1:
		m.target = parts[0]
	default:
		m.source, m.target = parts[0], parts[1]
		for _, o := range parts[2:] {
			for _, opt := range strings.Split(o, ",") {
				if opt == "ro" || opt == "readonly" {
					m.readOnly = true
				}
			}
		}
	}
	if strings.HasPrefix(m.source, "/") || strings.HasPrefix(m.source, ".") {
		m.typ = "bind"
	}
	return m
}

// dockerSocket reports whether a mount exposes the docker daemon's socket: the socket itself,
// anything named docker.sock, or a bind of a directory holding it (/, /var, /run, /var/run).
func dockerSocket(typ, source, target string) bool {
	for _, p := range []string{source, target} {
		if strings.Contains(p, "docker.sock") || strings.Contains(p, "/run/docker") {
			return true
		}
	}
	if typ != "bind" || source == "" {
		return false
	}
	switch path.Clean(source) {
	case "/", "/var", "/run", "/var/run":
		return true
	}
	return false
}

// hasNoNewPrivileges reports whether security options set no-new-privileges.
func hasNoNewPrivileges(opts []string) bool {
	for _, o := range opts {
		switch strings.ToLower(strings.ReplaceAll(o, "=", ":")) {
		case "no-new-privileges", "no-new-privileges:true":
			return true
		}
	}
	return false
}

// unconfined returns the security options that switch a confinement off.
func unconfined(opts []string) []string {
	var out []string
	for _, o := range opts {
		l := strings.ToLower(o)
		if strings.HasSuffix(l, "=unconfined") || strings.HasSuffix(l, ":unconfined") || l == "label=disable" || l == "label:disable" {
			out = append(out, o)
		}
	}
	return out
}

// rootUser reports whether a --user value (or a container's Config.User) runs as root; an
// empty user is the image's, which doctor cannot see in the argv and counts as root.
func rootUser(u string) bool {
	name, _, _ := strings.Cut(u, ":")
	return name == "" || name == "0" || name == "root"
}
