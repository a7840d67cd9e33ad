// Package dockerfile reads the repository's top-level Dockerfile with BuildKit's own parser
// (the frontend `docker build` runs) and returns what its final stage makes of the image: the
// base, the entrypoint, user, working directory, environment and labels it sets, and how the
// builder stage compiles the binary. It is a module of its own so that BuildKit's dependencies
// stay out of the scheduler's go.mod; test/e2e compares its output with the image ko builds
// (cmd/dockerfile-config prints it as JSON).
package dockerfile

import (
	"fmt"
	"os"
	"strings"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
	"github.com/moby/buildkit/frontend/dockerfile/shell"
)

// Image is what the Dockerfile's final stage sets, its build arguments expanded.
type Image struct {
	Base       string            `json:"base"`
	Entrypoint []string          `json:"entrypoint"`
	User       string            `json:"user"`
	WorkingDir string            `json:"workingDir"`
	Env        []string          `json:"env"`
	Labels     map[string]string `json:"labels"`
	// Copied maps each destination of a COPY --from=builder to its source.
	Copied map[string]string `json:"copied"`
	// Build is the builder stage's RUN that compiles the binary, as words.
	Build []string `json:"build"`
}

// Load parses path; args overrides build arguments' defaults (--build-arg).
func Load(path string, args map[string]string) (*Image, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	res, err := parser.Parse(f)
	if err != nil {
		return nil, err
	}
	stages, metaArgs, err := instructions.Parse(res.AST, nil)
	if err != nil {
		return nil, err
	}
	if len(stages) < 2 {
		return nil, fmt.Errorf("%s: %d stages, want a builder and the image", path, len(stages))
	}
	lex := shell.NewLex(res.EscapeToken)
	global := argEnv(nil, metaArgs, args, lex)
	img := &Image{Labels: map[string]string{}, Copied: map[string]string{}}
	final := stages[len(stages)-1]
	if img.Base, _, err = lex.ProcessWord(final.BaseName, shell.EnvsFromSlice(global)); err != nil {
		return nil, err
	}
	for _, st := range stages[:len(stages)-1] {
		env := global
		for _, c := range st.Commands {
			switch c := c.(type) {
			case *instructions.ArgCommand:
				env = argEnv(env, []instructions.ArgCommand{*c}, args, lex)
			case *instructions.RunCommand:
				words, err := lex.ProcessWords(strings.Join(c.CmdLine, " "), shell.EnvsFromSlice(env))
				if err != nil {
					return nil, err
				}
				if contains(words, "build") {
					img.Build = words
				}
			}
		}
	}
	return img, img.finalStage(final, lex, global)
}

func (img *Image) finalStage(st instructions.Stage, lex *shell.Lex, env []string) error {
	expand := func(w string) (string, error) {
		s, _, err := lex.ProcessWord(w, shell.EnvsFromSlice(env))
		return s, err
	}
	for _, c := range st.Commands {
		if e, ok := c.(interface {
			Expand(instructions.SingleWordExpander) error
		}); ok {
			if err := e.Expand(expand); err != nil {
				return err
			}
		}
		switch c := c.(type) {
		case *instructions.EnvCommand:
			for _, kv := range c.Env {
				img.Env = append(img.Env, kv.Key+"="+kv.Value)
				env = append(env, kv.Key+"="+kv.Value)
			}
		case *instructions.LabelCommand:
			for _, kv := range c.Labels {
				img.Labels[kv.Key] = kv.Value
			}
		case *instructions.UserCommand:
			img.User = c.User
		case *instructions.WorkdirCommand:
			img.WorkingDir = c.Path
		case *instructions.EntrypointCommand:
			if c.PrependShell {
				return fmt.Errorf("ENTRYPOINT in shell form runs /bin/sh, which distroless has not")
			}
			img.Entrypoint = c.CmdLine
		case *instructions.CopyCommand:
			for _, src := range c.SourcePaths {
				img.Copied[c.DestPath] = c.From + ":" + src
			}
		}
	}
	return nil
}

// argEnv adds the ARGs' values, as --build-arg or their defaults, to env.
func argEnv(env []string, cmds []instructions.ArgCommand, args map[string]string, lex *shell.Lex) []string {
	out := append([]string(nil), env...)
	for _, c := range cmds {
		for _, a := range c.Args {
			v, ok := args[a.Key]
			if !ok && a.Value != nil {
				v, _, _ = lex.ProcessWord(*a.Value, shell.EnvsFromSlice(out))
			}
			out = append(out, a.Key+"="+v)
		}
	}
	return out
}

func contains(words []string, w string) bool {
	for _, x := range words {
		if x == w {
			return true
		}
	}
	return false
}

// Flag returns the value of the build's flag name (-ldflags, -o), or "" and false.
func (img *Image) Flag(name string) (string, bool) {
	for i, w := range img.Build {
		if w == name && i+1 < len(img.Build) {
			return img.Build[i+1], true
		}
		if v, ok := strings.CutPrefix(w, name+"="); ok {
			return v, true
		}
	}
	return "", false
}
