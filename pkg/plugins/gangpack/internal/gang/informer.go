package gang

import "k8s.io/client-go/tools/cache"

// Changes turns one callback over an object's old and new state (old nil: added; cur nil:
// deleted) into informer event handlers. A deletion seen only as a tombstone passes the
// tombstone's last known object; an object of another type passes nil.
func Changes[T any](changed func(old, cur *T)) cache.ResourceEventHandlerFuncs {
	as := func(obj any) *T {
		t, _ := obj.(*T)
		return t
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { changed(nil, as(obj)) },
		UpdateFunc: func(old, cur any) { changed(as(old), as(cur)) },
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			changed(as(obj), nil)
		},
	}
}
