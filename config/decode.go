package config

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
)

// decoder fills a File from the parsed tree field by field, so that one
// bad value costs only its own field: every unknown key and every value of
// the wrong type is reported, each with its line, and the rest of the file
// is still checked.
type decoder struct {
	l     locator
	probs Problems
}

func (d *decoder) problem(n ast.Node, field, format string, args ...any) {
	p := Problem{File: d.l.path, Field: field, What: fmt.Sprintf(format, args...)}
	if n != nil && n.GetToken() != nil {
		p.Line = n.GetToken().Position.Line
	} else {
		p.Line = d.l.line(field)
	}
	d.probs = append(d.probs, p)
}

// unwrap skips the nodes that only decorate a value.
func unwrap(n ast.Node) ast.Node {
	for {
		switch v := n.(type) {
		case *ast.DocumentNode:
			n = v.Body
		case *ast.TagNode:
			if v.Start != nil && strings.HasPrefix(v.Start.Value, "!!") {
				return n // a type tag: let the value decoder judge it
			}
			n = v.Value
		case *ast.AnchorNode:
			n = v.Value
		default:
			return n
		}
	}
}

// hasAliases reports whether the tree uses anchors' aliases or merge keys,
// which the field-by-field decoder does not resolve.
func hasAliases(tree *ast.File) bool {
	found := false
	for _, doc := range tree.Docs {
		ast.Walk(visitor(func(n ast.Node) {
			switch n.(type) {
			case *ast.AliasNode, *ast.MergeKeyNode:
				found = true
			}
		}), doc)
	}
	return found
}

type visitor func(ast.Node)

func (v visitor) Visit(n ast.Node) ast.Visitor { v(n); return v }

func isNull(n ast.Node) bool {
	_, null := n.(*ast.NullNode)
	return n == nil || null
}

// pairs returns a mapping's key-value pairs.
func pairs(n ast.Node) ([]*ast.MappingValueNode, bool) {
	switch m := n.(type) {
	case *ast.MappingNode:
		return m.Values, true
	case *ast.MappingValueNode:
		return []*ast.MappingValueNode{m}, true
	}
	return nil, false
}

func keyOf(p *ast.MappingValueNode) string {
	if t := p.Key.GetToken(); t != nil {
		return t.Value
	}
	return p.Key.String()
}

func (d *decoder) decode(n ast.Node, v reflect.Value, field string) {
	n = unwrap(n)
	if isNull(n) {
		return
	}
	t := v.Type()
	switch {
	case t.Kind() == reflect.Pointer:
		p := reflect.New(t.Elem())
		before := len(d.probs)
		d.decode(n, p.Elem(), field)
		if len(d.probs) == before {
			v.Set(p)
		}
	case t.Kind() == reflect.Struct:
		ps, ok := pairs(n)
		if !ok {
			d.problem(n, field, "%s: want a mapping of keys", clipNode(n))
			return
		}
		for _, p := range ps {
			key := keyOf(p)
			sub := join(field, key)
			i, ok := fieldIndex(t, key)
			if !ok {
				d.problem(p.Key, sub, "unknown key (known here: %s)", strings.Join(keys(t), ", "))
				continue
			}
			d.decode(p.Value, v.Field(i), sub)
		}
	case t.Kind() == reflect.Slice && t.Elem().Kind() != reflect.Interface:
		seq, ok := n.(*ast.SequenceNode)
		if !ok {
			d.problem(n, field, "%s: want a list", clipNode(n))
			return
		}
		s := reflect.MakeSlice(t, len(seq.Values), len(seq.Values))
		for i, e := range seq.Values {
			d.decode(e, s.Index(i), fmt.Sprintf("%s[%d]", field, i))
		}
		v.Set(s)
	case t.Kind() == reflect.Map && t.Key().Kind() == reflect.String && t.Elem().Kind() == reflect.Struct:
		ps, ok := pairs(n)
		if !ok {
			d.problem(n, field, "%s: want a mapping of names", clipNode(n))
			return
		}
		m := reflect.MakeMapWithSize(t, len(ps))
		for _, p := range ps {
			e := reflect.New(t.Elem()).Elem()
			d.decode(p.Value, e, join(field, keyOf(p)))
			m.SetMapIndex(reflect.ValueOf(keyOf(p)).Convert(t.Key()), e)
		}
		v.Set(m)
	case t.Kind() == reflect.String && isString(n):
		// Most leaves are plain text: set them without the YAML decoder,
		// which costs a config of hundreds of agents most of its load.
		v.SetString(n.(*ast.StringNode).Value)
	default:
		p := reflect.New(t)
		if err := yaml.NodeToValue(n, p.Interface()); err != nil {
			d.problem(n, field, "%s", leafProblem(n, t))
			return
		}
		v.Set(p.Elem())
	}
}

// isString reports whether n is a text scalar, plain or quoted.
func isString(n ast.Node) bool {
	_, ok := n.(*ast.StringNode)
	return ok
}

// leafProblem says what a value of type t should have been.
func leafProblem(n ast.Node, t reflect.Type) string {
	text := clipNode(n)
	switch t.Kind() {
	case reflect.Int, reflect.Int64, reflect.Int32:
		if _, err := strconv.ParseInt(strings.ReplaceAll(text, "_", ""), 0, 64); errors.Is(err, strconv.ErrRange) || isBigInt(n) {
			return fmt.Sprintf("%s is too large: want a whole number of at most %d", text, maxOf(t))
		}
		return text + ": want a whole number"
	case reflect.Float64, reflect.Float32:
		return text + ": want a number"
	case reflect.Bool:
		return text + ": want true or false"
	case reflect.String:
		return text + ": want text"
	case reflect.Slice:
		return text + ": want a list"
	case reflect.Map:
		return text + ": want a mapping"
	}
	return text + ": cannot be read here"
}

func isBigInt(n ast.Node) bool {
	t := n.GetToken()
	if t == nil {
		return false
	}
	s := strings.TrimLeft(t.Value, "+-")
	return s != "" && strings.Trim(s, "0123456789_") == "" && len(s) > 18
}

func maxOf(t reflect.Type) int64 {
	return int64(1)<<(t.Bits()-1) - 1
}

func clipNode(n ast.Node) string {
	s := strings.TrimSpace(n.String())
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	if strings.ContainsAny(s, "\n:") {
		return strconv.Quote(s)
	}
	return s
}

func join(field, key string) string {
	if field == "" {
		return key
	}
	return field + "." + key
}

// fieldIndex finds the struct field whose yaml key is key.
func fieldIndex(t reflect.Type, key string) (int, bool) {
	for i := range t.NumField() {
		if yamlKey(t.Field(i)) == key {
			return i, true
		}
	}
	return 0, false
}

func keys(t reflect.Type) []string {
	var ks []string
	for i := range t.NumField() {
		if k := yamlKey(t.Field(i)); k != "" {
			ks = append(ks, k)
		}
	}
	return ks
}

func yamlKey(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	k, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	if k == "-" {
		return ""
	}
	if k == "" {
		return strings.ToLower(f.Name)
	}
	return k
}
