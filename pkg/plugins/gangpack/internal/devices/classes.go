package devices

import (
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Classes is a DeviceClassLister over DeviceClasses by name: a missing name is a NotFound
// error, as from an informer lister. kubectl ome plans with the classes it listed.
type Classes map[string]*resourceapi.DeviceClass

// ClassesOf indexes a list of DeviceClasses by name.
func ClassesOf(list []*resourceapi.DeviceClass) Classes {
	out := make(Classes, len(list))
	for _, c := range list {
		if c != nil {
			out[c.Name] = c
		}
	}
	return out
}

func (c Classes) List() ([]*resourceapi.DeviceClass, error) {
	out := make([]*resourceapi.DeviceClass, 0, len(c))
	for _, dc := range c {
		out = append(out, dc)
	}
	return out, nil
}

func (c Classes) Get(name string) (*resourceapi.DeviceClass, error) {
	if dc, ok := c[name]; ok {
		return dc, nil
	}
	return nil, apierrors.NewNotFound(resourceapi.Resource("deviceclasses"), name)
}

// DriverClass is a DeviceClass named after a driver that selects every device it publishes.
func DriverClass(driver string) *resourceapi.DeviceClass {
	return &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: driver}, Spec: resourceapi.DeviceClassSpec{
		Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: fmt.Sprintf("device.driver == %q", driver)}}}}}
}
