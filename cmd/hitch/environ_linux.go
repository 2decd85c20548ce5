package main

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// scrubEnviron overwrites the values of vars in the environment block the
// kernel shows as /proc/self/environ (the one the process started with;
// os.Unsetenv leaves it as it was). Only the values' bytes change, and
// nothing in Go refers to them once the variables are unset and their
// values copied.
func scrubEnviron(vars []string) error {
	stat, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return fmt.Errorf("scrub environment: %w", err)
	}
	// Fields after the command name, which is in parentheses and may hold
	// spaces; env_start and env_end are fields 50 and 51.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return fmt.Errorf("scrub environment: unexpected /proc/self/stat")
	}
	fields := strings.Fields(string(stat[i+1:]))
	if len(fields) < 49 {
		return fmt.Errorf("scrub environment: /proc/self/stat has %d fields", len(fields)+2)
	}
	start, err1 := strconv.ParseInt(fields[47], 10, 64)
	end, err2 := strconv.ParseInt(fields[48], 10, 64)
	if err1 != nil || err2 != nil || end <= start || end-start > 1<<24 {
		return fmt.Errorf("scrub environment: no environment block in /proc/self/stat")
	}
	mem, err := os.OpenFile("/proc/self/mem", os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("scrub environment: %w", err)
	}
	defer mem.Close()
	block := make([]byte, end-start)
	if _, err := mem.ReadAt(block, start); err != nil {
		return fmt.Errorf("scrub environment: read: %w", err)
	}
	off := 0
	for _, kv := range bytes.Split(block, []byte{0}) {
		k, _, ok := bytes.Cut(kv, []byte{'='})
		if ok && isOneOf(string(k), vars) {
			from := off + len(k) + 1
			zero := make([]byte, len(kv)-len(k)-1)
			if _, err := mem.WriteAt(zero, start+int64(from)); err != nil {
				return fmt.Errorf("scrub environment: write: %w", err)
			}
		}
		off += len(kv) + 1
	}
	return nil
}

func isOneOf(k string, vars []string) bool {
	for _, v := range vars {
		if v == k {
			return true
		}
	}
	return false
}
