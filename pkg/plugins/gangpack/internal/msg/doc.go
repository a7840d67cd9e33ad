// Package msg holds every status text the plugin produces. The texts are an interface:
// docs/reference.md lists them, and users and tests match on them.
package msg
