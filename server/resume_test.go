package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hitch-dev/hitch/api"
	"github.com/hitch-dev/hitch/internal/testproc"
	"github.com/hitch-dev/hitch/store/sqlite"
)

// cluster is one server at a time on one store: it can be SIGKILLed and
// started again, and clients find the new one.
type cluster struct {
	t     *testing.T
	dir   string
	mu    sync.Mutex
	p     *testproc.Server
	ready chan struct{} // closed while a server is up
	spec  *spec
}

func (c *cluster) current() (string, chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.p.URL, c.ready
}

// restart SIGKILLs the server and starts another on the same store.
func (c *cluster) restart() {
	c.mu.Lock()
	c.ready = make(chan struct{})
	old := c.p
	c.mu.Unlock()
	old.Kill()
	p := serve(c.t, c.dir)
	c.mu.Lock()
	c.p = p
	close(c.ready)
	c.mu.Unlock()
}

func (c *cluster) client() *client {
	url, _ := c.current()
	return &client{t: c.t, url: url, token: tokView, spec: c.spec}
}

// followBound bounds following every stream to its end. A stream that has
// not ended by then fails the test with its run's state.
const followBound = 90 * time.Second

// TestStreamResume follows runs while they progress, cutting each
// client's connection at random points and SIGKILLing the server once;
// each client resumes from its last event id (on the restarted server
// after the kill). The reassembled streams equal the journals exactly.
func TestStreamResume(t *testing.T) {
	dir := testConfig(t, true)
	p := serve(t, dir)
	c := &cluster{t: t, dir: dir, p: p, ready: make(chan struct{})}
	close(c.ready)
	c.spec = loadSpec(t, p.URL, tokView)
	admin := &client{t: t, url: p.URL, token: tokAdmin, spec: c.spec}
	var paths []string
	for i := range 6 {
		id := fmt.Sprintf("cr%d", i)
		start(t, admin, "crawl", "go", id)
		paths = append(paths, "/v1/runs/"+id+"/events")
	}
	start(t, admin, "boss", "go", "fam")
	paths = append(paths, "/v1/runs/fam/family/events")

	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	ctx, cancel := context.WithTimeout(context.Background(), followBound)
	defer cancel()
	var received sync.WaitGroup
	received.Add(len(paths))
	results := make([][]api.Entry, len(paths))
	errs := make([]error, len(paths))
	var wg sync.WaitGroup
	for i, path := range paths {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(seed), uint64(i)))
			results[i], errs[i] = followWithCuts(ctx, c, path, rng, &received)
		}()
	}
	// SIGKILL the server once every client has some events, while the
	// runs are still going.
	received.Wait()
	var before api.RunPage
	c.client().do("GET", "/v1/runs?status=queued,running", nil).want(t, 200, "").decode(t, &before)
	if len(before.Runs) == 0 {
		t.Fatal("every run ended before the kill: the kill would not cut a run mid-stream")
	}
	t.Logf("SIGKILL with %d runs going", len(before.Runs))
	c.restart()
	wg.Wait()
	failed := false
	for i, err := range errs {
		if err != nil {
			failed = true
			t.Errorf("%v\n%s", err, describeStream(t, c, paths[i]))
		}
	}
	if failed {
		t.FailNow()
	}
	view := c.client()
	for i, path := range paths {
		if !strings.Contains(path, "/family/") {
			id := strings.Split(path, "/")[3]
			sameEntries(t, results[i], journal(t, view, id))
			continue
		}
		var page api.RunPage
		view.do("GET", "/v1/runs?root_id=fam", nil).want(t, 200, "").decode(t, &page)
		total := 0
		for _, r := range page.Runs {
			var mine []api.Entry
			for _, en := range results[i] {
				if en.RunID == r.ID {
					mine = append(mine, en)
				}
			}
			sameEntries(t, mine, journal(t, view, r.ID))
			total += len(mine)
		}
		if total != len(results[i]) {
			t.Errorf("family stream sent %d entries of runs not in the family", len(results[i])-total)
		}
	}
}

// followWithCuts follows a stream to its end event, dropping the
// connection after a random number of events and resuming from the last
// id; a connection the server's death cuts is resumed once a server is up.
// It gives up when ctx ends, even in the middle of a read.
func followWithCuts(ctx context.Context, c *cluster, path string, rng *rand.Rand, received *sync.WaitGroup) ([]api.Entry, error) {
	var out []api.Entry
	lastID := ""
	signalled := false
	defer func() {
		if !signalled {
			received.Done() // the test must not wait for a client that gave up
		}
	}()
	attempt := 0
	for ; ctx.Err() == nil; attempt++ {
		url, ready := c.current()
		select {
		case <-ready:
		case <-ctx.Done():
			continue
		}
		cl := &client{t: c.t, url: url, token: tokView}
		cctx, cancel := context.WithCancel(ctx)
		resp, err := cl.openStream(cctx, path, lastID)
		if err != nil {
			cancel()
			continue // the server died: wait for the next one
		}
		if resp.StatusCode != 200 {
			cancel()
			resp.Body.Close()
			if resp.StatusCode == 503 || resp.StatusCode == 502 {
				continue
			}
			return out, fmt.Errorf("%s: status %d", path, resp.StatusCode)
		}
		cut := 1 + rng.IntN(8)
		n, ended := 0, false
		var ferr error
		_ = readEvents(resp.Body, func(ev event) bool {
			switch ev.kind {
			case api.EventEntry:
				var en api.Entry
				if err := json.Unmarshal(ev.data, &en); err != nil {
					ferr = err
					return false
				}
				out = append(out, en)
				lastID = ev.id
				n++
			case api.EventEnd:
				ended = true
				return false
			default:
				ferr = fmt.Errorf("%s: event %s: %s", path, ev.kind, ev.data)
				return false
			}
			if !signalled && len(out) >= 3 {
				signalled = true
				received.Done()
			}
			return n < cut
		})
		cancel()
		resp.Body.Close()
		if ferr != nil {
			return out, ferr
		}
		if ended {
			return out, nil
		}
	}
	return out, fmt.Errorf("%s: no end event within %s: %d entries over %d connections, last event id %q",
		path, followBound, len(out), attempt, lastID)
}

// describeStream tells where the runs of a stream that did not end stand:
// each run's status and position over the API, the tail of its journal,
// its lease in the store, and whether the server is up.
func describeStream(t *testing.T, c *cluster, path string) string {
	c.mu.Lock()
	p := c.p
	c.mu.Unlock()
	var b strings.Builder
	select {
	case <-p.Exited():
		fmt.Fprintf(&b, "  the server exited: %v\n%s\n", p.Err(), p.Log())
		return b.String()
	default:
	}
	view := &client{t: t, url: p.URL, token: tokView}
	ids := []string{strings.Split(path, "/")[3]}
	if strings.Contains(path, "/family/") {
		var page api.RunPage
		view.do("GET", "/v1/runs?root_id="+ids[0], nil).want(t, 200, "").decode(t, &page)
		ids = ids[:0]
		for _, r := range page.Runs {
			ids = append(ids, r.ID)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := sqlite.Open(ctx, filepath.Join(c.dir, "runs.db"), sqlite.ReadOnly())
	if err != nil {
		fmt.Fprintf(&b, "  open the store for its leases: %v\n", err)
	} else {
		defer st.Close()
	}
	for _, id := range ids {
		var r api.Run
		view.do("GET", "/v1/runs/"+id, nil).want(t, 200, "").decode(t, &r)
		fmt.Fprintf(&b, "  run %s: status %s, position %d, updated %s", id, r.Status, r.Position, r.UpdatedAt.Format(time.RFC3339Nano))
		if st != nil {
			if row, err := st.RunGet(ctx, id); err != nil {
				fmt.Fprintf(&b, "; lease: %v", err)
			} else if row.LeaseOwner == "" {
				fmt.Fprintf(&b, "; no lease (token %d)", row.LeaseToken)
			} else {
				fmt.Fprintf(&b, "; lease %d held by %s until %s (now %s)", row.LeaseToken, row.LeaseOwner,
					row.LeaseExpires.Format(time.RFC3339Nano), time.Now().UTC().Format(time.RFC3339Nano))
			}
		}
		b.WriteString("\n")
		var page api.EntryPage
		view.do("GET", fmt.Sprintf("/v1/runs/%s/journal?after=%d", id, max(r.Position-4, 0)), nil).want(t, 200, "").decode(t, &page)
		for _, en := range page.Entries {
			fmt.Fprintf(&b, "    %d %s %s %s\n", en.Pos, en.At.Format(time.RFC3339Nano), en.Kind, en.Data)
		}
	}
	return b.String()
}

// TestIdempotentStartAfterKill SIGKILLs the server while a start is in
// flight, at random points (before the run is created, between commit
// and reply, after the reply); the retried start with the same id on the
// restarted server gives one run, driven once to its end.
func TestIdempotentStartAfterKill(t *testing.T) {
	dir := testConfig(t, true)
	p := serve(t, dir)
	c := &cluster{t: t, dir: dir, p: p, ready: make(chan struct{})}
	close(c.ready)
	c.spec = loadSpec(t, p.URL, tokView)
	for i := range 6 {
		id := fmt.Sprintf("idem%d", i)
		url, _ := c.current()
		first := &client{t: t, url: url, token: tokAdmin}
		done := make(chan struct{})
		go func() {
			defer close(done)
			body := strings.NewReader(fmt.Sprintf(`{"agent":"crawl","input":"go","id":%q}`, id))
			req, _ := newRequest("POST", first.url+"/v1/runs", body, tokAdmin)
			if resp, err := httpClient.Do(req); err == nil {
				resp.Body.Close()
			}
		}()
		time.Sleep(time.Duration(i) * 700 * time.Microsecond) // where the kill lands, not a synchronisation
		c.restart()
		<-done
		retry := c.client()
		retry.token = tokAdmin
		a := retry.do("POST", "/v1/runs", api.StartRun{Agent: "crawl", Input: "go", ID: id})
		if a.status != 200 && a.status != 201 {
			t.Fatalf("retried start: %d %s", a.status, a.body)
		}
		retry.token = tokView
		if r := wait(t, retry, id); r.Status != "completed" {
			t.Fatalf("%s: %+v", id, r)
		}
		starts, ends := 0, 0
		for _, en := range journal(t, retry, id) {
			switch en.Kind {
			case "run.started":
				starts++
			case "run.ended":
				ends++
			}
		}
		if starts != 1 || ends != 1 {
			t.Errorf("%s: %d starts and %d ends in its journal", id, starts, ends)
		}
		var page api.RunPage
		retry.do("GET", "/v1/runs?agent=crawl", nil).want(t, 200, "").decode(t, &page)
		if len(page.Runs) != i+1 {
			t.Errorf("after %d starts, %d crawl runs", i+1, len(page.Runs))
		}
	}
}
