package gang

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// decodeStrict decodes kube-scheduler's plugin arguments into args as the API server decodes
// objects: field names match case-sensitively, and an unknown or duplicate field is an error
// naming it and the valid fields. kube-scheduler decodes its configuration strictly but hands
// an out-of-tree plugin's arguments over as raw bytes (a *runtime.Unknown, JSON or YAML), so a
// misspelt key would otherwise be dropped in silence.
func decodeStrict(obj runtime.Object, args *Args) error {
	u, ok := obj.(*runtime.Unknown)
	if !ok {
		return fmt.Errorf("want args of type runtime.Unknown, got %T", obj)
	}
	if u.Raw == nil {
		return nil
	}
	raw := u.Raw
	switch u.ContentType {
	case runtime.ContentTypeJSON, "":
	case runtime.ContentTypeYAML:
		var err error
		if raw, err = yaml.YAMLToJSONStrict(raw); err != nil {
			return err
		}
	default:
		return fmt.Errorf("not supported content type %s", u.ContentType)
	}
	strict, err := json.UnmarshalStrict(raw, args)
	if err != nil {
		return err
	}
	if len(strict) == 0 {
		return nil
	}
	msgs := make([]string, len(strict))
	for i, e := range strict {
		msgs[i] = e.Error()
	}
	return errors.New(strings.Join(msgs, ", ") + " (valid fields: " + strings.Join(ArgsFields(), ", ") + ")")
}

// ArgsFields returns the JSON names of the plugin arguments, sorted.
func ArgsFields() []string {
	t := reflect.TypeFor[Args]()
	names := make([]string, 0, t.NumField())
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name != "" && name != "-" {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}
