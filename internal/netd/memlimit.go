package netd

import (
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// netd's container has a hard memory limit (render's, 256 MiB) and the model forwarder holds up
// to maxModelBuffered of request bodies at once. Go's collector would by default let the heap
// grow to twice what is live before it collects the bodies already answered, so a flood of large
// requests could take netd past the limit, where the kernel ends it and the run with it. netd's
// serving process therefore gives the runtime a soft limit of memoryShare of the container's:
// near it, the collector runs as often as it must.

// memoryShare is the part of the container's memory limit the serving process's heap aims under.
// The supervisor, its own Go process, and the decision logs' page cache share the rest.
const memoryShare = 0.6

// cgroupMemoryFiles hold the container's memory limit: cgroup v2, then v1.
var cgroupMemoryFiles = []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}

// setMemoryLimit sets the soft memory limit from the container's limit, and returns it; 0 when
// the container has none that netd can read (then nothing changes).
func setMemoryLimit() int64 {
	limit := containerMemoryLimit(cgroupMemoryFiles)
	if limit <= 0 {
		return 0
	}
	soft := int64(float64(limit) * memoryShare)
	debug.SetMemoryLimit(soft)
	return soft
}

// containerMemoryLimit reads the first of files that names a limit, in bytes; 0 for none ("max",
// or v1's page-rounded largest value).
func containerMemoryLimit(files []string) int64 {
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil || n <= 0 || n >= 1<<62 {
			return 0
		}
		return n
	}
	return 0
}
