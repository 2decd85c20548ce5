package api_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/hitch-dev/hitch/api"
)

// TestEntrySpelling: an entry has one spelling whoever encodes it: at in
// UTC with six fractional digits (a trailing zero kept), HTML-safe
// escapes, and the same bytes again after a round trip.
func TestEntrySpelling(t *testing.T) {
	at := time.Date(2026, 5, 1, 11, 30, 18, 406950000, time.FixedZone("CEST", 2*3600))
	e := api.Entry{RunID: "r1", Pos: 7, Kind: "call.settled", At: at, Data: json.RawMessage(`{"text": "a <b> & c"}`)}
	const want = `{"run":"r1","pos":7,"kind":"call.settled","at":"2026-05-01T09:30:18.406950Z","data":{"text":"a \u003cb\u003e \u0026 c"}}`
	got, err := json.Marshal(e)
	if err != nil || string(got) != want {
		t.Fatalf("entry:\n%s, %v\nwant\n%s", got, err, want)
	}
	var back api.Entry
	if err := json.Unmarshal(got, &back); err != nil {
		t.Fatal(err)
	}
	if again, _ := json.Marshal(back); string(again) != want {
		t.Fatalf("after a round trip:\n%s", again)
	}
	s := api.SessionEntry{SessionID: "s1", Pos: 1, Kind: "message.admitted", At: at, Data: json.RawMessage(`{}`)}
	if got, _ := json.Marshal(s); string(got) != `{"session":"s1","pos":1,"kind":"message.admitted","at":"2026-05-01T09:30:18.406950Z","data":{}}` {
		t.Fatalf("session entry: %s", got)
	}
}
