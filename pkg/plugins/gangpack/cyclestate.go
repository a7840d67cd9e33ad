package gangpack

import fwk "k8s.io/kube-scheduler/framework"

// readState returns the CycleState entry under key if it has type T.
func readState[T fwk.StateData](cs fwk.CycleState, key fwk.StateKey) (T, bool) {
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
