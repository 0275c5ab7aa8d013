package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/charmbracelet/huh"

	"github.com/aboxhq/abox/internal/catalog"
	"github.com/aboxhq/abox/internal/egress"
	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/paths"
)

// newProfileChoice is the profile option that asks for a new name.
const newProfileChoice = "+ new profile"

// picker runs huh forms, on the terminal or, accessible, as plain numbered prompts read line by
// line (screen readers, scripted input).
type picker struct {
	ctx        context.Context
	in         io.Reader
	out        io.Writer
	accessible bool
}

func (p *picker) run(fields ...huh.Field) error {
	form := huh.NewForm(huh.NewGroup(fields...)).WithAccessible(p.accessible).WithInput(p.in).WithOutput(p.out)
	if err := form.RunWithContext(p.ctx); err != nil {
		if errors.Is(err, huh.ErrUserAborted) {
			return errorf("run `abox init` again when ready", "init cancelled; nothing was written")
		}
		return err
	}
	return nil
}

// pickInit asks for every answer, starting from ans.
func (a *App) pickInit(ctx context.Context, st *initState, ans initAnswers, accessible bool) (initAnswers, error) {
	in := a.In
	if accessible {
		in = &byteReader{r: a.In} // huh reads each answer with a fresh scanner: never read ahead
	}
	out := a.Err
	if accessible {
		out = a.Out
	}
	p := &picker{ctx: ctx, in: in, out: out, accessible: accessible}
	steps := []func(*picker, *initState, *initAnswers) error{
		pickProfile, pickServers, pickTools, pickToolchains, pickEgress, pickContext, pickMode, confirmInit,
	}
	for _, step := range steps {
		if err := step(p, st, &ans); err != nil {
			return ans, err
		}
	}
	return ans, nil
}

func pickProfile(p *picker, st *initState, ans *initAnswers) error {
	opts := []huh.Option[string]{}
	for _, name := range st.cfg.ProfileNames() {
		opts = append(opts, huh.NewOption(fmt.Sprintf("%s (gateway port %d)", name, st.cfg.Profiles[name].Port), name))
	}
	opts = append(opts, huh.NewOption(newProfileChoice, newProfileChoice))
	choice := ans.profile
	if err := p.run(huh.NewSelect[string]().Title("Gateway profile").Options(opts...).Value(&choice)); err != nil {
		return err
	}
	if choice == newProfileChoice {
		choice = ""
		if err := p.run(huh.NewInput().Title("New profile name").Value(&choice).Validate(validProfileName)); err != nil {
			return err
		}
	}
	ans.profile = strings.TrimSpace(choice)
	return validProfileName(ans.profile)
}

func validProfileName(s string) error {
	if !manifest.IsProjectName(strings.TrimSpace(s)) {
		return fmt.Errorf("%q is not a valid profile name (a-z 0-9 . _ -)", s)
	}
	return nil
}

func pickServers(p *picker, st *initState, ans *initAnswers) error {
	names := st.cat.Names()
	if len(names) == 0 {
		fmt.Fprintln(p.out, "MCP servers: none known (no Docker MCP Toolkit catalog, no custom-servers.yaml); skipped")
		return nil
	}
	var opts []huh.Option[string]
	for _, n := range names {
		e, _ := st.cat.Lookup(n)
		opts = append(opts, huh.NewOption(serverLabel(e), n).Selected(slices.Contains(ans.servers, n)))
	}
	return p.run(huh.NewMultiSelect[string]().Title("MCP servers (behind the gateway)").Options(opts...).Value(&ans.servers))
}

// serverLabel shows a server with what it needs: secrets, and whether its image is pinned.
func serverLabel(e catalog.Entry) string {
	label := e.Name
	var notes []string
	for _, s := range e.Secrets {
		notes = append(notes, "secret "+s.Name)
	}
	if !e.Pinned() {
		notes = append(notes, "unpinned image")
	}
	if e.Type == "remote" {
		notes = append(notes, "remote")
	}
	if len(notes) > 0 {
		label += " (" + strings.Join(notes, ", ") + ")"
	}
	return label
}

// pickTools offers tool narrowing for each chosen server whose tools are known. Keeping every
// tool ticked, or none, means no narrowing.
func pickTools(p *picker, st *initState, ans *initAnswers) error {
	for _, s := range ans.servers {
		e, ok := st.cat.Lookup(s)
		if !ok || len(e.Tools) == 0 {
			continue
		}
		narrow := false
		if err := p.run(huh.NewConfirm().Title(fmt.Sprintf("Narrow %s's %d tools?", s, len(e.Tools))).Value(&narrow)); err != nil {
			return err
		}
		if !narrow {
			continue
		}
		var chosen []string
		var opts []huh.Option[string]
		for _, t := range e.Tools {
			opts = append(opts, huh.NewOption(t, t))
		}
		if err := p.run(huh.NewMultiSelect[string]().Title("Tools of " + s).Options(opts...).Value(&chosen)); err != nil {
			return err
		}
		if len(chosen) > 0 && len(chosen) < len(e.Tools) {
			if ans.tools == nil {
				ans.tools = map[string][]string{}
			}
			ans.tools[s] = chosen
		}
	}
	return nil
}

func pickToolchains(p *picker, _ *initState, ans *initAnswers) error {
	var opts []huh.Option[string]
	for _, t := range manifest.Installable() {
		opts = append(opts, huh.NewOption(t, t).Selected(slices.Contains(ans.toolchains, t)))
	}
	return p.run(huh.NewMultiSelect[string]().Title("Toolchains").Options(opts...).Value(&ans.toolchains))
}

func pickEgress(p *picker, st *initState, ans *initAnswers) error {
	candidates := append([]string{}, ans.egress...)
	for _, t := range ans.toolchains {
		candidates = manifest.Union(candidates, st.suggested[t])
	}
	candidates = manifest.Union(candidates, st.remotes)
	if len(candidates) > 0 {
		var opts []huh.Option[string]
		for _, h := range candidates {
			opts = append(opts, huh.NewOption(h, h).Selected(slices.Contains(ans.egress, h)))
		}
		if err := p.run(huh.NewMultiSelect[string]().Title("Egress allowlist").Options(opts...).Value(&ans.egress)); err != nil {
			return err
		}
	}
	var extra string
	field := huh.NewInput().Title("More hosts (space-separated; *.example.com, host:port)").Value(&extra).
		Validate(func(s string) error { _, err := parseHosts(s); return err })
	if err := p.run(field); err != nil {
		return err
	}
	hosts, err := parseHosts(extra)
	ans.egress = manifest.Union(ans.egress, hosts)
	return err
}

func parseHosts(s string) ([]string, error) {
	var out []string
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == ',' }) {
		e, err := egress.Parse(f)
		if err != nil {
			return nil, err
		}
		out = append(out, e.String())
	}
	return out, nil
}

func pickContext(p *picker, st *initState, ans *initAnswers) error {
	text := strings.Join(ans.context, " ")
	home := os.Getenv("HOME")
	check := func(s string) error {
		for _, d := range strings.Fields(s) {
			if !strings.HasPrefix(d, "/") && !strings.HasPrefix(d, "~") {
				return fmt.Errorf("%s: write an absolute path or one starting with ~/", d)
			}
			if fi, err := os.Stat(paths.ExpandHome(d, home)); err != nil || !fi.IsDir() {
				return fmt.Errorf("%s is not a directory", d)
			}
		}
		return nil
	}
	field := huh.NewInput().Title("Read-only context directories (space-separated, optional)").Value(&text).Validate(check)
	if err := p.run(field); err != nil {
		return err
	}
	if err := check(text); err != nil {
		return err
	}
	ans.context = strings.Fields(text)
	return nil
}

func pickMode(p *picker, _ *initState, ans *initAnswers) error {
	var opts []huh.Option[string]
	for _, m := range manifest.PermissionModes {
		opts = append(opts, huh.NewOption(m, m))
	}
	return p.run(huh.NewSelect[string]().Title("Claude Code permission mode").Options(opts...).Value(&ans.permissionMode))
}

func confirmInit(p *picker, _ *initState, ans *initAnswers) error {
	summary := fmt.Sprintf("project %s · profile %s · servers %s · toolchains %s · egress %s · mode %s",
		ans.project, ans.profile, listOrNone(ans.servers), listOrNone(ans.toolchains), listOrNone(ans.egress), ans.permissionMode)
	ok := true
	if err := p.run(huh.NewConfirm().Title("Write agentbox.yaml?").Description(summary).Value(&ok)); err != nil {
		return err
	}
	if !ok {
		return errorf("run `abox init` again when ready", "init cancelled; nothing was written")
	}
	return nil
}

// byteReader reads one byte at a time, so that each prompt's scanner consumes exactly one line.
type byteReader struct{ r io.Reader }

func (b *byteReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	return b.r.Read(p[:1])
}
