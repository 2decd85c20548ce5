package store

import (
	"encoding/json"
	"fmt"
)

// Bounds on what one call to any driver may carry. They keep every request,
// and so every transaction and every answer, to a known size; drivers check
// them with CheckName and CheckEntries before they write.
const (
	// MaxNameBytes bounds ids, agent names, owners, entry kinds and hashes.
	MaxNameBytes = 256
	// MaxEntries bounds the entries of one RunCreate or JournalAppend.
	MaxEntries = 1000
	// MaxEntryBytes bounds the JSON data of one entry.
	MaxEntryBytes = 16 << 20
	// MaxWriteBytes bounds the JSON data of one call in all.
	MaxWriteBytes = 64 << 20
)

// CheckName refuses an empty required name and one longer than
// MaxNameBytes, naming field.
func CheckName(field, v string, required bool) error {
	switch {
	case required && v == "":
		return fmt.Errorf("%s is empty", field)
	case len(v) > MaxNameBytes:
		return fmt.Errorf("%s is %d bytes long, more than %d", field, len(v), MaxNameBytes)
	}
	return nil
}

// CheckEntries refuses entries past the bounds above, a missing kind or
// data that is not JSON, naming the entry.
func CheckEntries(es []EntryInput) error {
	if len(es) > MaxEntries {
		return fmt.Errorf("entries: %d entries in one call, more than %d", len(es), MaxEntries)
	}
	total := 0
	for i, e := range es {
		if err := CheckName(fmt.Sprintf("entries[%d].kind", i), e.Kind, true); err != nil {
			return err
		}
		if len(e.Data) > MaxEntryBytes {
			return fmt.Errorf("entries[%d].data is %d bytes, more than %d", i, len(e.Data), MaxEntryBytes)
		}
		if !json.Valid(e.Data) {
			return fmt.Errorf("entries[%d].data is not valid JSON", i)
		}
		total += len(e.Data)
	}
	if total > MaxWriteBytes {
		return fmt.Errorf("entries: %d bytes of data in one call, more than %d", total, MaxWriteBytes)
	}
	return nil
}
