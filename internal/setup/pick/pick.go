package pick

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/charmbracelet/huh"

	"github.com/aboxhq/abox/internal/config"
	"github.com/aboxhq/abox/internal/egress"
	"github.com/aboxhq/abox/internal/manifest"
	"github.com/aboxhq/abox/internal/secrets"
	"github.com/aboxhq/abox/internal/setup"
)

// Errors the picker ends on; nothing was written when either is returned.
var (
	// ErrCancelled: the user declined the summary, or aborted a form.
	ErrCancelled = errors.New("init cancelled; nothing was written")
	// ErrInputEnded: accessible input ran out before every question was answered.
	ErrInputEnded = errors.New("init's input ended before every question was answered; nothing was written")
)

// Options say where and how the picker asks.
type Options struct {
	In  io.Reader
	Out io.Writer
	// Accessible asks with plain numbered prompts, each answer read as one line.
	Accessible bool
	// Home is the host home directory, for context directories starting with ~.
	Home string
}

// newProfileChoice is the profile option that asks for a new name.
const newProfileChoice = "+ new profile"

// Credential choices of the picker.
const (
	loginVolumeChoice = "login"
	injectedChoice    = "injected"
)

// picker runs huh forms with the options of one [Run].
type picker struct {
	ctx context.Context
	in  io.Reader
	Options
}

// Run asks for every answer, starting from ans, and returns them once the user confirms the
// summary. It ends with [ErrCancelled] when the user declines or aborts, and with
// [ErrInputEnded] when accessible input runs out.
func Run(ctx context.Context, st *setup.State, ans setup.Answers, o Options) (setup.Answers, error) {
	p := &picker{ctx: ctx, in: o.In, Options: o}
	if o.Accessible {
		p.in = &byteReader{r: o.In} // huh reads each answer with a fresh scanner: never read ahead
	}
	steps := []func(*picker, *setup.State, *setup.Answers) error{
		pickProfile, pickServers, pickTools, pickToolchains, pickEgress, pickContext, pickMode, pickCredential, confirm,
	}
	for _, step := range steps {
		if err := step(p, st, &ans); err != nil {
			return ans, err
		}
	}
	return ans, nil
}

func (p *picker) run(fields ...huh.Field) (err error) {
	form := huh.NewForm(huh.NewGroup(fields...)).WithAccessible(p.Accessible).WithInput(p.in).WithOutput(p.Out)
	// huh's accessible select indexes its options with the number it read, 0 when the input
	// ended, and panics: scripted answers that run out end init with an error instead.
	if br, ok := p.in.(*byteReader); ok {
		defer func() {
			if r := recover(); r != nil {
				if !br.eof {
					panic(r)
				}
				err = ErrInputEnded
			}
		}()
	}
	if err := form.RunWithContext(p.ctx); err != nil {
		if errors.Is(err, huh.ErrUserAborted) {
			return ErrCancelled
		}
		return err
	}
	return nil
}

func pickProfile(p *picker, st *setup.State, ans *setup.Answers) error {
	opts := []huh.Option[string]{}
	for _, name := range st.Config.ProfileNames() {
		opts = append(opts, huh.NewOption(fmt.Sprintf("%s (gateway port %d)", name, st.Config.Profiles[name].Port), name))
	}
	opts = append(opts, huh.NewOption(newProfileChoice, newProfileChoice))
	choice := ans.Profile
	if err := p.run(huh.NewSelect[string]().Title("Gateway profile").Options(opts...).Value(&choice)); err != nil {
		return err
	}
	if choice == newProfileChoice {
		choice = ""
		valid := func(s string) error { _, err := config.ParseProfileName(s); return err }
		if err := p.run(huh.NewInput().Title("New profile name").Value(&choice).Validate(valid)); err != nil {
			return err
		}
	}
	var err error
	ans.Profile, err = config.ParseProfileName(choice)
	return err
}

func pickServers(p *picker, st *setup.State, ans *setup.Answers) error {
	names := st.Catalog.Names()
	if len(names) == 0 {
		fmt.Fprintln(p.Out, "MCP servers: none known (no Docker MCP Toolkit catalog, no custom-servers.yaml); skipped")
		return nil
	}
	opts := choices(names, ans.Servers)
	for i, n := range names {
		e, _ := st.Catalog.Lookup(n)
		opts[i].Key = setup.ServerLabel(e)
	}
	return p.run(huh.NewMultiSelect[string]().Title("MCP servers (behind the gateway)").Options(opts...).Value(&ans.Servers))
}

// pickTools offers tool narrowing for each chosen server whose tools are known. Keeping every
// tool ticked, or none, means no narrowing.
func pickTools(p *picker, st *setup.State, ans *setup.Answers) error {
	for _, s := range ans.Servers {
		e, ok := st.Catalog.Lookup(s)
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
		if err := p.run(huh.NewMultiSelect[string]().Title("Tools of " + s).Options(choices(e.Tools, nil)...).Value(&chosen)); err != nil {
			return err
		}
		ans.Narrow(s, chosen, len(e.Tools))
	}
	return nil
}

func pickToolchains(p *picker, _ *setup.State, ans *setup.Answers) error {
	opts := choices(manifest.Installable(), ans.Toolchains)
	return p.run(huh.NewMultiSelect[string]().Title("Toolchains").Options(opts...).Value(&ans.Toolchains))
}

func pickEgress(p *picker, st *setup.State, ans *setup.Answers) error {
	candidates := st.EgressCandidates(*ans)
	if len(candidates) > 0 {
		opts := choices(candidates, ans.Egress)
		if err := p.run(huh.NewMultiSelect[string]().Title("Egress allowlist").Options(opts...).Value(&ans.Egress)); err != nil {
			return err
		}
	}
	var extra string
	field := huh.NewInput().Title("More hosts (space-separated; *.example.com, host:port)").Value(&extra).
		Validate(func(s string) error { _, err := egress.ParseHosts(s); return err })
	if err := p.run(field); err != nil {
		return err
	}
	hosts, err := egress.ParseHosts(extra)
	ans.Egress = manifest.Union(ans.Egress, hosts)
	return err
}

func pickContext(p *picker, _ *setup.State, ans *setup.Answers) error {
	text := strings.Join(ans.Context, " ")
	check := func(s string) error { return setup.CheckContextDirs(s, p.Home) }
	field := huh.NewInput().Title("Read-only context directories (space-separated, optional)").Value(&text).Validate(check)
	if err := p.run(field); err != nil {
		return err
	}
	if err := check(text); err != nil {
		return err
	}
	ans.Context = strings.Fields(text)
	return nil
}

func pickMode(p *picker, _ *setup.State, ans *setup.Answers) error {
	opts := choices(manifest.PermissionModes, nil)
	return p.run(huh.NewSelect[string]().Title("Claude Code permission mode").Options(opts...).Value(&ans.PermissionMode))
}

// pickCredential asks how Claude Code gets its credential, config.yaml's choice for every
// project: the login volume, or a secret netd injects. It asks for the secret's name only,
// never its value; init's report names the command that stores it.
func pickCredential(p *picker, _ *setup.State, ans *setup.Answers) error {
	choice := loginVolumeChoice
	if ans.Credential != "" {
		choice = injectedChoice
	}
	sel := huh.NewSelect[string]().Title("Claude credential (config.yaml, every project)").Options(
		huh.NewOption("login volume (claude.ai subscription; run `abox shell` once to log in)", loginVolumeChoice),
		huh.NewOption("injected credential (API key or `claude setup-token` token, stored with `abox secrets set <name>`; the agent never holds it)", injectedChoice),
	).Value(&choice)
	if err := p.run(sel); err != nil {
		return err
	}
	if choice == loginVolumeChoice {
		ans.Credential = ""
		return nil
	}
	name := cmp.Or(ans.Credential, "claude")
	valid := func(s string) error { _, err := secrets.ParseName(s); return err }
	field := huh.NewInput().Title("Secret name (the value is stored with `abox secrets set <name>`, not here)").Value(&name).Validate(valid)
	if err := p.run(field); err != nil {
		return err
	}
	var err error
	ans.Credential, err = secrets.ParseName(name)
	return err
}

// confirm shows the summary; declining it is [ErrCancelled].
func confirm(p *picker, _ *setup.State, ans *setup.Answers) error {
	ok := true
	if err := p.run(huh.NewConfirm().Title("Write agentbox.yaml?").Description(ans.Summary()).Value(&ok)); err != nil {
		return err
	}
	if !ok {
		return ErrCancelled
	}
	return nil
}

// choices are options named by their values, those in selected ticked.
func choices(values, selected []string) []huh.Option[string] {
	opts := make([]huh.Option[string], len(values))
	for i, v := range values {
		opts[i] = huh.NewOption(v, v).Selected(slices.Contains(selected, v))
	}
	return opts
}

// byteReader reads one byte at a time, so that each prompt's scanner consumes exactly one line.
type byteReader struct {
	r   io.Reader
	eof bool // the input has ended
}

func (b *byteReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	n, err := b.r.Read(p[:1])
	if err == io.EOF {
		b.eof = true
	}
	return n, err
}
