package audit

import (
	"fmt"
	"reflect"
	"testing"
)

// mirrorDiff compares the fields of a type with those of its JSON shadow
// (the type its MarshalJSON encodes), by reflection, in order: the same
// names, the same JSON tags, and the same types, except that a float64 is
// mirrored by a jsonFloat and an embedded struct by its own shadow (given
// in embedded). It returns one line per difference, "" where there is none.
func mirrorDiff(typ, shadow reflect.Type, embedded map[reflect.Type]reflect.Type) []string {
	var diffs []string
	n := max(typ.NumField(), shadow.NumField())
	for i := 0; i < n; i++ {
		if i >= typ.NumField() {
			diffs = append(diffs, fmt.Sprintf("%s has field %s, %s has no field %d", shadow, shadow.Field(i).Name, typ, i))
			continue
		}
		if i >= shadow.NumField() {
			diffs = append(diffs, fmt.Sprintf("%s has field %s, %s has no field %d", typ, typ.Field(i).Name, shadow, i))
			continue
		}
		f, g := typ.Field(i), shadow.Field(i)
		if f.Anonymous != g.Anonymous {
			diffs = append(diffs, fmt.Sprintf("field %d: %s.%s embedded %v, %s.%s embedded %v", i, typ, f.Name, f.Anonymous, shadow, g.Name, g.Anonymous))
			continue
		}
		if f.Anonymous {
			if want, ok := embedded[f.Type]; !ok || g.Type != want {
				diffs = append(diffs, fmt.Sprintf("field %d: %s embeds %s, %s embeds %s (want %v)", i, typ, f.Type, shadow, g.Type, want))
				continue
			}
			diffs = append(diffs, mirrorDiff(f.Type, g.Type, embedded)...)
			continue
		}
		if f.Name != g.Name {
			diffs = append(diffs, fmt.Sprintf("field %d: %s.%s, %s.%s", i, typ, f.Name, shadow, g.Name))
		}
		if f.Tag.Get("json") != g.Tag.Get("json") {
			diffs = append(diffs, fmt.Sprintf("field %s: tag %q in %s, %q in %s", f.Name, f.Tag.Get("json"), typ, g.Tag.Get("json"), shadow))
		}
		want := f.Type
		if want == reflect.TypeFor[float64]() {
			want = reflect.TypeFor[jsonFloat]()
		}
		if g.Type != want && !(g.Type == f.Type && f.Type.Kind() != reflect.Float64) {
			diffs = append(diffs, fmt.Sprintf("field %s: %s in %s, %s in %s (want %s)", f.Name, f.Type, typ, g.Type, shadow, want))
		}
	}
	return diffs
}

// TestJSONShadowsMirror: the JSON shadow types that MuEstimate, Observer
// and ReplayReport (with its embedded AuditedPlan) encode through list
// the same fields as the types they mirror, in the same order, with the
// same names and JSON tags, each float64 as a jsonFloat and every other
// field with its own type. The comparison is by reflection over both
// types, so a field added, renamed, retagged, retyped or moved on one side
// only fails here (checked by adding a field to Observer only, and a tag
// change to replayReportJSON only, on a scratch copy). A float64 mirrored
// by a plain float64 would encode a non-finite value as an error again:
// that fails too. mirrorDiff is checked against a pair that differs.
func TestJSONShadowsMirror(t *testing.T) {
	embedded := map[reflect.Type]reflect.Type{reflect.TypeFor[AuditedPlan](): reflect.TypeFor[auditedPlanJSON]()}
	for _, c := range []struct{ typ, shadow reflect.Type }{
		{reflect.TypeFor[MuEstimate](), reflect.TypeFor[muEstimateJSON]()},
		{reflect.TypeFor[Observer](), reflect.TypeFor[observerJSON]()},
		{reflect.TypeFor[AuditedPlan](), reflect.TypeFor[auditedPlanJSON]()},
		{reflect.TypeFor[ReplayReport](), reflect.TypeFor[replayReportJSON]()},
	} {
		for _, d := range mirrorDiff(c.typ, c.shadow, embedded) {
			t.Errorf("%s and its JSON shadow %s differ: %s", c.typ, c.shadow, d)
		}
	}

	// The comparison finds each kind of difference.
	type base struct {
		A float64 `json:"a"`
		B []int   `json:"b"`
	}
	for _, c := range []struct {
		name   string
		shadow reflect.Type
	}{
		{"extra field", reflect.TypeFor[struct {
			A jsonFloat `json:"a"`
			B []int     `json:"b"`
			C int       `json:"c"`
		}]()},
		{"missing field", reflect.TypeFor[struct {
			A jsonFloat `json:"a"`
		}]()},
		{"tag", reflect.TypeFor[struct {
			A jsonFloat `json:"a"`
			B []int     `json:"bb"`
		}]()},
		{"plain float64", reflect.TypeFor[struct {
			A float64 `json:"a"`
			B []int   `json:"b"`
		}]()},
		{"type", reflect.TypeFor[struct {
			A jsonFloat `json:"a"`
			B []int64   `json:"b"`
		}]()},
		{"order", reflect.TypeFor[struct {
			B []int     `json:"b"`
			A jsonFloat `json:"a"`
		}]()},
	} {
		if len(mirrorDiff(reflect.TypeFor[base](), c.shadow, nil)) == 0 {
			t.Errorf("mirrorDiff finds no difference in a shadow with another %s", c.name)
		}
	}
	if d := mirrorDiff(reflect.TypeFor[base](), reflect.TypeFor[struct {
		A jsonFloat `json:"a"`
		B []int     `json:"b"`
	}](), nil); len(d) != 0 {
		t.Errorf("mirrorDiff on a faithful shadow: %q", d)
	}
}
