// Package gang is the plugin's vocabulary, shared by every part: what a PodGroup says about
// its gang (Info, Interpret, Args), the member index, placed members, fit, the room
// Terminating pods give back, and the values that cross the parts' seams (Reading, Drop,
// Shortfall). It holds no state.
package gang
