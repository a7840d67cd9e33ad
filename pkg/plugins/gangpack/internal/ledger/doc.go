// Package ledger is the one owner of the plugin's cross-cycle state (see Ledger). The rest of
// the plugin reads it and changes it only through its methods, which are verbs: the
// planner's decisions carried out, a member's way through Reserve, Permit and PostBind,
// unwinds, wake-ups and garbage collection. It imports only the vocabulary (gang, msg,
// metrics) and the pin store.
package ledger
