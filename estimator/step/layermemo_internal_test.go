package step

import (
	"reflect"
	"testing"
)

// layoutKey holds every field of Layout but its two lists (LayerSplit, which a
// layer's times do not read, and RecomputeModules, held as recomputeMask), under
// the same name and type: a field added to Layout that layoutKey lacks would let
// the layer memo give one layout's times to another.
func TestLayoutKeyHoldsLayout(t *testing.T) {
	lists := map[string]bool{"LayerSplit": true, "RecomputeModules": true}
	key := reflect.TypeFor[layoutKey]()
	for f := range reflect.TypeFor[Layout]().Fields() {
		if lists[f.Name] {
			continue
		}
		kf, ok := key.FieldByName(f.Name)
		if !ok || kf.Type != f.Type {
			t.Errorf("layoutKey lacks Layout.%s (%s)", f.Name, f.Type)
		}
	}
	if _, ok := key.FieldByName("recomputeMask"); !ok {
		t.Error("layoutKey lacks the recomputed modules' mask")
	}
}
