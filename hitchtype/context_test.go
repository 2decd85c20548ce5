package hitchtype_test

import (
	"testing"

	"github.com/hitch-dev/hitch/hitchtype"
)

// TestContextFold pairs each model request with how it ended: a reply and
// its usage and cost, a failed or interrupted call with none, an old
// attempt with no account, and one still in flight; the cost so far is
// not priced as soon as one request that came back is not.
func TestContextFold(t *testing.T) {
	t.Parallel()
	entries := []struct{ kind, data string }{
		{hitchtype.KindRunStarted, `{"agent":"a","version":1,"input":"hi","depth_left":1}`},
		{hitchtype.KindModelAttempt, `{"attempt":1,"turn":1}`}, // journaled before accounts
		{hitchtype.KindModelReply, `{"attempt":1,"turn":1,"reply":{"usage":{"input_tokens":10,"output_tokens":2}},"cost_usd":0.5}`},
		{hitchtype.KindModelAttempt, `{"attempt":2,"turn":2,"context":{"estimator":"bytes/4","window":100,"estimate":7,"categories":{"user":3,"assistant":4}}}`},
		{hitchtype.KindModelFailed, `{"attempt":2,"kind":"overloaded","message":"busy"}`},
		{hitchtype.KindModelAttempt, `{"attempt":3,"turn":2,"purpose":"compaction","context":{"estimator":"bytes/4","window":100,"estimate":9,"categories":{"system":5,"user":4}}}`},
		{hitchtype.KindCompacted, `{"attempt":3,"through":1,"summary":"s","usage":{"input_tokens":9,"output_tokens":1},"cost_usd":0.25}`},
		{hitchtype.KindModelAttempt, `{"attempt":4,"turn":2}`},
		{hitchtype.KindModelLost, `{"attempt":4}`},
		{hitchtype.KindModelAttempt, `{"attempt":5,"turn":2}`},
	}
	var f hitchtype.ContextFold
	for _, e := range entries {
		if err := f.Add(e.kind, []byte(e.data)); err != nil {
			t.Fatal(err)
		}
	}
	reqs := f.Requests()
	if len(reqs) != 5 {
		t.Fatalf("%d requests, want 5", len(reqs))
	}
	want := []struct {
		result  string
		account bool
		usage   bool
	}{{"reply", false, true}, {"failed", true, false}, {"reply", true, true}, {"interrupted", false, false}, {"", false, false}}
	for i, w := range want {
		r := reqs[i]
		if r.Result != w.result || (r.Context != nil) != w.account || (r.Usage != nil) != w.usage {
			t.Errorf("request %d: %+v, want result %q, account %v, usage %v", i+1, r, w.result, w.account, w.usage)
		}
	}
	if a := reqs[2].Context; reqs[2].Purpose != "compaction" || a.Categories.Sum() != a.Estimate || a.Categories.System != 5 {
		t.Errorf("compaction request %+v", reqs[2])
	}
	if pct, ok := reqs[1].Context.Fill(); !ok || pct != 7 {
		t.Errorf("fill %v %v, want 7%%", pct, ok)
	}
	if c := hitchtype.CostSoFar(reqs); c != nil {
		t.Errorf("cost so far %v, want not priced (a failed call reported nothing)", *c)
	}
	if c := hitchtype.CostSoFar([]hitchtype.ContextRequest{reqs[0], reqs[2], reqs[4]}); c == nil || *c != 0.75 {
		t.Errorf("cost so far of two priced replies and one in flight: %v, want 0.75", c)
	}
	if err := f.Add(hitchtype.KindModelAttempt, []byte(`{"attempt":"x"}`)); err == nil {
		t.Error("a malformed attempt folded without an error")
	}
}
