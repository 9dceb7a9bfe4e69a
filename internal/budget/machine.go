package budget

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// FallbackMemory is what DefaultProcessLimit assumes the machine has when
// it cannot read how much memory there is (a system without /proc).
const FallbackMemory uint64 = 4 << 30

// MachineMemory is the memory this process may use: the machine's
// physical memory (MemTotal of /proc/meminfo), or the memory limit of the
// process's cgroup (v2 memory.max, v1 memory.limit_in_bytes) when smaller.
// ok is false when neither could be read (FallbackMemory is returned).
func MachineMemory() (n uint64, ok bool) {
	n = Unlimited
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) >= 2 && f[0] == "MemTotal:" {
				if kb, err := strconv.ParseUint(f[1], 10, 64); err == nil && kb > 0 {
					n, ok = kb<<10, true
				}
			}
		}
	}
	if c, found := cgroupLimit(); found && c < n {
		n, ok = c, true
	}
	if !ok {
		return FallbackMemory, false
	}
	return n, true
}

// cgroupLimit reads the memory limit of the process's cgroup.
func cgroupLimit() (uint64, bool) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return 0, false
	}
	best, found := Unlimited, false
	for _, line := range strings.Split(string(b), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		var files []string
		switch {
		case parts[0] == "0" && parts[1] == "": // v2
			files = []string{filepath.Join("/sys/fs/cgroup", parts[2], "memory.max"), "/sys/fs/cgroup/memory.max"}
		case strings.Contains(","+parts[1]+",", ",memory,"): // v1
			files = []string{filepath.Join("/sys/fs/cgroup/memory", parts[2], "memory.limit_in_bytes"), "/sys/fs/cgroup/memory/memory.limit_in_bytes"}
		}
		for _, f := range files {
			raw, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			s := strings.TrimSpace(string(raw))
			if s == "max" {
				break
			}
			v, err := strconv.ParseUint(s, 10, 64)
			// v1 reports "no limit" as a huge page-rounded number.
			if err == nil && v > 0 && v < 1<<62 && v < best {
				best, found = v, true
			}
			break
		}
	}
	return best, found
}

// DefaultProcessLimit is the process budget when none is set: three
// quarters of MachineMemory, leaving the rest to what budgets do not
// count (the Go heap of compiled code and of the host's own structures,
// the page cache, other processes).
func DefaultProcessLimit() uint64 {
	n, _ := MachineMemory()
	return n / 4 * 3
}
