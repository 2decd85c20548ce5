package config

import (
	"errors"
	"io"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	yaml3 "go.yaml.in/yaml/v3"
)

// decodeFast reads a plain file, the common case, with the lighter YAML
// parser: for a config of hundreds of agents the positioned tree costs
// four times the time and allocations of the whole rest of the load. It
// takes only what both parsers read alike (mappings, lists, one-line text, whole
// numbers, true and false; no anchors, tags, merge keys or second
// documents) and reports false for anything else, and for any problem:
// the field-by-field decoder then reads the file again and says, with
// lines, what is wrong. FuzzFastDecode checks that what it accepts, the
// other decoder reads the same.
func decodeFast(b []byte) (f *File, ok bool) {
	defer func() {
		if recover() != nil {
			f, ok = nil, false
		}
	}()
	if strings.ContainsAny(string(b), "\t?") {
		return nil, false // tabs and explicit keys: the two parsers differ on their edge cases
	}
	dec := yaml3.NewDecoder(strings.NewReader(string(b)))
	var doc yaml3.Node
	if err := dec.Decode(&doc); err != nil || doc.Kind != yaml3.DocumentNode || len(doc.Content) != 1 {
		return nil, false
	}
	var more yaml3.Node
	if err := dec.Decode(&more); !errors.Is(err, io.EOF) {
		return nil, false
	}
	f = &File{}
	d := fastDecoder{lines: strings.Split(string(b), "\n")}
	if !d.fastValue(doc.Content[0], reflect.ValueOf(f).Elem()) {
		return nil, false
	}
	return f, true
}

// fastDecoder holds the file's lines, to check that a plain scalar is
// written on one line as it reads.
type fastDecoder struct{ lines []string }

// fastValue sets v from n, or reports false where the field-by-field
// decoder must judge.
func (d *fastDecoder) fastValue(n *yaml3.Node, v reflect.Value) bool {
	if n.Anchor != "" || n.Style&yaml3.TaggedStyle != 0 {
		return false
	}
	if n.Kind == yaml3.ScalarNode && n.Tag == "!!null" {
		// Left as it is, as the other decoder does; only the spellings
		// both parsers read as null.
		return n.Value == "" || n.Value == "~" || n.Value == "null"
	}
	t := v.Type()
	switch t.Kind() {
	case reflect.Pointer:
		p := reflect.New(t.Elem())
		if !d.fastValue(n, p.Elem()) {
			return false
		}
		v.Set(p)
		return true
	case reflect.Struct:
		return d.fastPairs(n, func(key string, val *yaml3.Node) bool {
			i, ok := fieldIndex(t, key)
			return ok && d.fastValue(val, v.Field(i))
		})
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Interface {
			return d.fastAny(n, v)
		}
		if n.Kind != yaml3.SequenceNode {
			return false
		}
		s := reflect.MakeSlice(t, len(n.Content), len(n.Content))
		for i, e := range n.Content {
			if !d.fastValue(e, s.Index(i)) {
				return false
			}
		}
		v.Set(s)
		return true
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return false
		}
		if t.Elem().Kind() == reflect.Interface {
			return d.fastAny(n, v)
		}
		m := reflect.MakeMap(t)
		ok := d.fastPairs(n, func(key string, val *yaml3.Node) bool {
			e := reflect.New(t.Elem()).Elem()
			if val.Kind == yaml3.ScalarNode && val.Tag == "!!null" {
				return false // the two decoders differ on a null value in a map
			}
			if !d.fastValue(val, e) {
				return false
			}
			m.SetMapIndex(reflect.ValueOf(key).Convert(t.Key()), e)
			return true
		})
		if ok {
			v.Set(m)
		}
		return ok
	case reflect.Interface:
		return d.fastAny(n, v)
	case reflect.String:
		s, ok := d.fastText(n)
		if ok {
			v.SetString(s)
		}
		return ok
	case reflect.Bool:
		b, ok := fastBool(n)
		if ok {
			v.SetBool(b)
		}
		return ok
	case reflect.Int, reflect.Int64, reflect.Int32:
		if !plain(n) || !wholeNumber(n.Value) {
			return false
		}
		i, err := strconv.ParseInt(n.Value, 10, t.Bits())
		if err != nil {
			return false
		}
		v.SetInt(i)
		return true
	case reflect.Float64:
		if !plain(n) || !decimal(n.Value) {
			return false
		}
		x, err := strconv.ParseFloat(n.Value, 64)
		if err != nil {
			return false
		}
		v.SetFloat(x)
		return true
	}
	return false
}

// fastAny sets v, of an interface type or a map or list of them, to what
// the YAML decoder would make of n: maps of text keys, lists, text and
// true or false. Numbers are left to it.
func (d *fastDecoder) fastAny(n *yaml3.Node, v reflect.Value) bool {
	x, ok := d.anyOf(n)
	if !ok {
		return false
	}
	if x == nil {
		return true
	}
	xv := reflect.ValueOf(x)
	if !xv.Type().AssignableTo(v.Type()) {
		return false
	}
	v.Set(xv)
	return true
}

func (d *fastDecoder) anyOf(n *yaml3.Node) (any, bool) {
	if n.Anchor != "" || n.Style&yaml3.TaggedStyle != 0 {
		return nil, false
	}
	switch n.Kind {
	case yaml3.MappingNode:
		m := map[string]any{}
		ok := d.fastPairs(n, func(key string, val *yaml3.Node) bool {
			x, ok := d.anyOf(val)
			m[key] = x
			return ok
		})
		return m, ok
	case yaml3.SequenceNode:
		s := make([]any, len(n.Content))
		for i, e := range n.Content {
			x, ok := d.anyOf(e)
			if !ok {
				return nil, false
			}
			s[i] = x
		}
		return s, true
	case yaml3.ScalarNode:
		if n.Tag == "!!null" {
			return nil, n.Value == "" || n.Value == "~" || n.Value == "null"
		}
		if b, ok := fastBool(n); ok {
			return b, true
		}
		return d.fastText(n)
	}
	return nil, false
}

// fastPairs calls set for each key and value of mapping n; keys must be
// text and appear once.
func (d *fastDecoder) fastPairs(n *yaml3.Node, set func(key string, val *yaml3.Node) bool) bool {
	if n.Kind != yaml3.MappingNode || len(n.Content)%2 != 0 {
		return false
	}
	for i := 0; i < len(n.Content); i += 2 {
		k := n.Content[i]
		key, ok := d.fastText(k)
		if !ok {
			return false
		}
		for j := 0; j < i; j += 2 {
			if n.Content[j].Value == key {
				return false
			}
		}
		if !set(key, n.Content[i+1]) {
			return false
		}
	}
	return true
}

// fastText is a text scalar both parsers read alike: a plain word that no
// YAML version takes for a number, a truth value or null; single-quoted
// text; double-quoted text without escapes. Blocks (| and >) are left to
// the other decoder: the parsers differ on some of their edge cases.
func (d *fastDecoder) fastText(n *yaml3.Node) (string, bool) {
	if n.Kind != yaml3.ScalarNode || n.Tag != "!!str" || n.Anchor != "" {
		return "", false
	}
	switch n.Style {
	case 0:
		s := n.Value
		if s == "" || strings.ContainsAny(s, "\n\t\\#:{}[]&*") || strings.IndexByte("+-.~!&*%@`|>?:,[]{}", s[0]) >= 0 ||
			(s[0] >= '0' && s[0] <= '9' && !durationLike(s)) {
			return "", false
		}
		switch strings.ToLower(s) {
		case "y", "n", "yes", "no", "on", "off", "true", "false", "null":
			return "", false
		}
		return s, d.written(n, s, true)
	case yaml3.SingleQuotedStyle:
		return n.Value, !strings.ContainsAny(n.Value, "\n'") && d.written(n, "'"+n.Value+"'", false)
	case yaml3.DoubleQuotedStyle:
		return n.Value, !strings.ContainsAny(n.Value, "\n\\") && d.written(n, `"`+n.Value+`"`, false)
	}
	return "", false
}

// durationLike is text such as 30s, 1h30m or 2.5s: digits, dots and
// unit letters, none of which a YAML number may hold.
func durationLike(s string) bool {
	letter := false
	for _, r := range s {
		switch {
		case r >= '0' && r <= '9', r == '.':
		case strings.ContainsRune("nsuµmh", r):
			letter = true
		default:
			return false
		}
	}
	return letter
}

// written reports whether the file holds text at n's line and column,
// followed by the line's end, a space, a comma or a closing bracket (or,
// for a plain key, a colon): a
// scalar folded from several lines is not.
func (d *fastDecoder) written(n *yaml3.Node, text string, colon bool) bool {
	if n.Line < 1 || n.Line > len(d.lines) || n.Column < 1 {
		return false
	}
	rest, ok := strings.CutPrefix(d.lines[n.Line-1][min(n.Column-1, len(d.lines[n.Line-1])):], text)
	return ok && (rest == "" || strings.IndexByte(" ,]}\r", rest[0]) >= 0 || (colon && rest[0] == ':'))
}

func fastBool(n *yaml3.Node) (bool, bool) {
	if !plain(n) || n.Tag != "!!bool" {
		return false, false
	}
	switch n.Value {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	return false, false
}

func plain(n *yaml3.Node) bool {
	return n.Kind == yaml3.ScalarNode && n.Style == 0 && n.Anchor == ""
}

// wholeNumber is a decimal integer without sign tricks, leading zeros or
// separators, short enough for any int64.
func wholeNumber(s string) bool {
	s = strings.TrimPrefix(s, "-")
	if s == "" || len(s) > 18 || (s[0] == '0' && len(s) > 1) {
		return false
	}
	return strings.Trim(s, "0123456789") == ""
}

// decimal is a whole number or one with a fractional part.
func decimal(s string) bool {
	w, frac, found := strings.Cut(s, ".")
	return wholeNumber(w) && (!found || (frac != "" && strings.Trim(frac, "0123456789") == ""))
}

// lazyTree is a file's positioned tree, parsed the first time a problem
// asks for a line: a file that decodeFast read and that has no problem
// never pays for it.
type lazyTree struct {
	once sync.Once
	src  []byte
	tree *ast.File
}

func (t *lazyTree) get() *ast.File {
	t.once.Do(func() {
		defer func() { _ = recover() }() // no tree, no lines: the problem is still reported
		t.tree, _ = parser.ParseBytes(t.src, 0)
	})
	return t.tree
}
