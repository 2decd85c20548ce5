package postgres

import (
	"strings"
	"testing"
	"testing/fstest"
)

func TestEmbeddedMigrations(t *testing.T) {
	if len(migrations) == 0 || SchemaVersion != len(migrations) {
		t.Fatalf("%d migrations, SchemaVersion %d", len(migrations), SchemaVersion)
	}
	for i, m := range migrations {
		if m.Version != i+1 || m.Name == "" || strings.TrimSpace(m.sql) == "" {
			t.Fatalf("migration %d: %+v", i, m)
		}
	}
}

func TestLoadMigrationsRefusesBadFiles(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files []string
		want  string
	}{
		{"gap", []string{"001_a.up.sql", "003_c.up.sql"}, "without gaps"},
		{"no name", []string{"001.up.sql"}, "NNN_name"},
		{"not a number", []string{"one_a.up.sql"}, "NNN_name"},
		{"starts at two", []string{"002_b.up.sql"}, "without gaps"},
	} {
		fsys := fstest.MapFS{}
		for _, f := range tc.files {
			fsys["migrations/"+f] = &fstest.MapFile{Data: []byte("SELECT 1;")}
		}
		if _, err := loadMigrations(fsys); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("%s: %v, want an error saying %q", tc.name, err, tc.want)
		}
	}
	ms, err := loadMigrations(fstest.MapFS{
		"migrations/001_a.up.sql": {Data: []byte("A")},
		"migrations/002_b.up.sql": {Data: []byte("B")},
	})
	if err != nil || len(ms) != 2 || ms[1].Version != 2 || ms[1].Name != "b" || ms[1].sql != "B" {
		t.Fatalf("load: %v %+v", err, ms)
	}
}
