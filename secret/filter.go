package secret

// A filter answers, in one pass over a text and without allocating,
// whether a Redactor could change it: most texts hold no secret, and the
// exact search (every form, verbatim and folded across whitespace, and
// every masked pattern) costs a copy of the text and one scan per form.
//
// It looks at every run of four bytes of the text, and of the text with
// its whitespace taken out as the folded search takes it out, for the
// first four bytes of a form, and at every run of three bytes for a masked
// value's head. A text with none of them cannot match; one with any goes
// to the exact search.
type filter struct {
	off    bool // some form holds a byte the folded search skips: search every text
	form   bitset
	forms  map[uint32]struct{}
	head   bitset
	heads  map[uint32]struct{}
	masked bool
}

// bitset is a 65,536-bit summary of a set of words, to reject most
// candidates before the set's map is asked.
type bitset [1 << 10]uint64

func (b *bitset) add(w uint32)      { h := hash(w); b[h>>6] |= 1 << (h & 63) }
func (b *bitset) has(w uint32) bool { h := hash(w); return b[h>>6]&(1<<(h&63)) != 0 }

func hash(w uint32) uint32 { return (w * 0x9E3779B1) >> 16 }

func newFilter(forms []form, masked []maskedPattern) *filter {
	f := &filter{forms: map[uint32]struct{}{}, heads: map[uint32]struct{}{}, masked: len(masked) > 0}
	for _, fm := range forms {
		if len(fm.text) < 4 {
			f.off = true
			continue
		}
		for i := 0; i < len(fm.text); i++ {
			if isFold(fm.text[i]) || fm.text[i] == '\\' {
				f.off = true
			}
		}
		w := word4(fm.text)
		f.form.add(w)
		f.forms[w] = struct{}{}
	}
	for _, m := range masked {
		w := uint32(m.head[0])<<16 | uint32(m.head[1])<<8 | uint32(m.head[2])
		f.head.add(w)
		f.heads[w] = struct{}{}
	}
	return f
}

func word4(s string) uint32 {
	return uint32(s[0])<<24 | uint32(s[1])<<16 | uint32(s[2])<<8 | uint32(s[3])
}

// mayMatch reports whether the exact search could find anything in s.
func mayMatch[T string | []byte](f *filter, s T) bool {
	if f.off {
		return true
	}
	var raw, dense uint32 // the last bytes seen, and the last the folded view kept
	kept, escape := 0, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		raw = raw<<8 | uint32(c)
		if f.rawHit(raw, i) {
			return true
		}
		// The folded view, as folded builds it: whitespace, and the
		// escapes \n \r \t of a JSON string, are left out.
		switch {
		case escape:
			escape = false
		case isFold(c):
		case c == '\\' && i+1 < len(s) && (s[i+1] == 'n' || s[i+1] == 'r' || s[i+1] == 't'):
			escape = true
		default:
			dense = dense<<8 | uint32(c)
			if kept++; kept >= 4 && f.isForm(dense) {
				return true
			}
		}
	}
	return false
}

// rawHit reports a form's first four bytes, or a masked value's head,
// ending at byte i of the text.
func (f *filter) rawHit(raw uint32, i int) bool {
	if i >= 3 && f.isForm(raw) {
		return true
	}
	if !f.masked || i < 2 {
		return false
	}
	w := raw & 0xFFFFFF
	if !f.head.has(w) {
		return false
	}
	_, ok := f.heads[w]
	return ok
}

func (f *filter) isForm(w uint32) bool {
	if !f.form.has(w) {
		return false
	}
	_, ok := f.forms[w]
	return ok
}
