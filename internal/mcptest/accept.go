package mcptest

import (
	"bufio"
	"net"
	"strconv"
	"strings"
	"testing"
)

// AcceptSlow waits on l for a call of the slow tool to dial in, and
// returns the process id it reports (its server's) and the connection:
// closing it lets that call return.
func AcceptSlow(t testing.TB, l net.Listener) (int, net.Conn) {
	t.Helper()
	conn, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	return pid, conn
}
