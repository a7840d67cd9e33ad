package gang

import fwk "k8s.io/kube-scheduler/framework"

// ReadState returns the CycleState entry under key if it has type T.
func ReadState[T fwk.StateData](cs fwk.CycleState, key fwk.StateKey) (T, bool) {
	var zero T
	if cs == nil {
		return zero, false
	}
	d, err := cs.Read(key)
	if err != nil {
		return zero, false
	}
	t, ok := d.(T)
	return t, ok
}
