package collective

import (
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/stepcost/stepcost/estimator/catalog"
	"github.com/stepcost/stepcost/estimator/invalid"
)

// PlaceGroups adopts the caller's groups without copying or checking them for
// overlaps: every coefficient of every family, and the shape, must be those Place
// gives the same groups, listed in any order; groups of another size or outside the
// cluster are refused by field.
func TestPlaceGroupsLikePlace(t *testing.T) {
	s, err := catalog.System("dgx-h100")
	if err != nil {
		t.Fatal(err)
	}
	s.Nodes = 12
	c, err := s.Build()
	if err != nil {
		t.Fatal(err)
	}
	g := c.Spec.GPUsPerNode
	// strided returns the groups {r, r+stride, …} of size n for r in starts.
	strided := func(starts []int, n, stride int) [][]int {
		var out [][]int
		for _, r := range starts {
			grp := make([]int, n)
			for i := range grp {
				grp[i] = r + i*stride
			}
			out = append(out, grp)
		}
		return out
	}
	reversed := strided([]int{0, 1, 2, 3}, 24, 4)
	for _, grp := range reversed {
		slices.Reverse(grp)
	}
	for name, groups := range map[string][][]int{
		"data-parallel groups of TP 4": strided([]int{0, 1, 2, 3}, 24, 4),
		"pairs between nodes":          strided([]int{0, 1, 2, 3, 4, 5, 6, 7, 16, 17}, 2, g),
		"one group of every GPU":       strided([]int{0}, 12*g, 1),
		"groups listed backwards":      reversed,
	} {
		t.Run(name, func(t *testing.T) {
			want, err := Place(c, groups[0], groups[1:])
			if err != nil {
				t.Fatal(err)
			}
			own := make([][]int, len(groups))
			for i, grp := range groups {
				own[i] = slices.Clone(grp)
			}
			got, err := PlaceGroups(c, own)
			if err != nil {
				t.Fatal(err)
			}
			for f := range numFamilies {
				want.ensure(f)
				got.ensure(f)
			}
			if !reflect.DeepEqual(got.coef, want.coef) || !reflect.DeepEqual(got.Shape, want.Shape) ||
				!slices.Equal(got.Ranks, want.Ranks) || got.Concurrent != want.Concurrent ||
				got.Domains != want.Domains || got.PerDomain != want.PerDomain || got.Uniform != want.Uniform {
				t.Errorf("PlaceGroups differs from Place:\n  got  %+v\n  want %+v", got.coef, want.coef)
			}
		})
	}
	for name, tc := range map[string]struct {
		groups [][]int
		field  string
	}{
		"a group of another size": {[][]int{{0, 8}, {1, 9, 17}}, "concurrent[0]"},
		"outside the cluster":     {[][]int{{0, 8}, {1, 12 * g}}, "concurrent[0]"},
		"a negative GPU":          {[][]int{{-1, 8}, {1, 9}}, "group"},
		"no group":                {nil, "group"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := PlaceGroups(c, tc.groups)
			var fe *invalid.Error
			if !errors.As(err, &fe) || fe.Field != tc.field {
				t.Fatalf("err = %v, want one naming %s", err, tc.field)
			}
		})
	}
}
