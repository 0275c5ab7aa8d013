package watch

// The catalog, one group of patterns per line of reasons. Sources: each tool's documentation
// of the files it reads from a project (and, for the agents, the attack of issue 34). An entry
// that can grow the watched files of an unchanged workspace raises [WatchReading].
var catalog = join(
	// CI runs elsewhere, with the repository's secrets.
	at(AtRoot, "ci", "GitHub Actions", "on push, pull request or schedule", "its steps run on the repository's runners with its secrets",
		".github/workflows/", ".github/actions/"),
	at(AtRoot, "ci", "GitLab CI", "on push", "its jobs' scripts run on the project's runners with its variables", ".gitlab-ci.yml"),
	at(AtRoot, "ci", "CircleCI, Azure Pipelines, Jenkins, Buildkite", "on push", "their pipelines' steps are shell commands",
		".circleci/", "azure-pipelines.yml", "Jenkinsfile", ".buildkite/"),

	// git and what installs its hooks.
	at(InEveryDir, "git", "git", "checkout, add, diff, merge, status",
		"selects the filter, diff and merge drivers of the user's git config (git-lfs, a textconv) for the paths it names", ".gitattributes"),
	at(AtRoot, "git", "git", "checkout, add, diff, merge, status",
		"attributes over every .gitattributes, selecting drivers; exclude hides files from git status and git add",
		".git/info/attributes", ".git/info/exclude"),
	at(AtRoot, "git", "git submodule", "git submodule update, git clone --recurse-submodules",
		"names the repositories git fetches and checks out, and where", ".gitmodules"),
	at(AtRoot, "git", "Git LFS", "every fetch, checkout and push of LFS files", "names the LFS server, which gets the user's credentials", ".lfsconfig"),
	at(AtRoot, "git", "git hooks (core.hooksPath, husky)", "commit, merge, checkout, push", "hook scripts a project's set-up points git at",
		".githooks/", ".husky/"),
	at(AtRoot, "git", "pre-commit", "git commit once its hook is installed, pre-commit run",
		"local hooks run their entry command; the others are fetched from the repositories it names", ".pre-commit-config.yaml"),
	at(AtRoot, "git", "lefthook", "git hooks once installed", "its commands run on each hook",
		"lefthook*", ".lefthook*", ".config/lefthook*"),

	// Build tools of no one language.
	at(AtPackage, "build", "make", "make, and a makefile's include",
		"recipes are shell commands; GNU make reads GNUmakefile, then makefile, before Makefile", "Makefile", "GNUmakefile", "makefile", "*.mk"),
	at(AtPackage, "build", "just", "just, in the directory or any below it (just searches upward)",
		"recipes are shell commands; just takes its file's name in any case (JUSTFILE), so the patterns do", anyCase("justfile"), anyCase(".justfile")),
	at(AtPackage, "build", "Task", "task", "tasks are shell commands", "Taskfile*", "taskfile*"),
	at(AtPackage, "build", "CMake", "cmake's configure step, which editors' CMake extensions run on opening the folder",
		"execute_process runs programs; presets choose the compilers and toolchain file", "CMakeLists.txt", "CMakePresets.json", "CMakeUserPresets.json"),
	at(InEveryDir, "build", "Meson", "meson setup, and its subdir() of every directory",
		"run_command and custom targets run programs at configure time", "meson.build"),
	at(AtRoot, "build", "Bazel, Bazelisk", "every bazel command",
		"flags such as --run_under, repository rules that run programs, and the bazel Bazelisk downloads (and from where)",
		".bazelrc", ".bazeliskrc", ".bazelversion", "WORKSPACE", "WORKSPACE.bazel", "MODULE.bazel"),

	// node
	at(AtPackage, "node", "npm, yarn, pnpm, bun", "install, and every npm run", "lifecycle scripts run on install, scripts on run", "package.json"),
	at(AtPackage, "node", "npm", "every npm command", "node-options loads a module into every script; script-shell picks the shell; registry where packages come from", ".npmrc"),
	at(AtPackage, "node", "Yarn", "every yarn command", "yarnPath (yarn-path) runs that file instead of yarn; plugins are loaded; editors run its SDKs",
		".yarnrc", ".yarnrc.yml", ".yarn/releases/", ".yarn/plugins/", ".yarn/sdks/"),
	at(AtPackage, "node", "Yarn Plug'n'Play", "every script yarn runs, and editors' SDKs", "loaded into node before the script", ".pnp.cjs", ".pnp.loader.mjs"),
	at(AtPackage, "node", "pnpm", "install", ".pnpmfile.cjs's hooks run; the workspace file names the packages whose scripts run",
		".pnpmfile.cjs", "pnpm-workspace.yaml"),
	at(AtPackage, "node", "Bun", "bun run, bun test", "preload scripts run before the program", "bunfig.toml"),
	at(AtPackage, "node", "Deno", "deno task", "tasks are shell commands", "deno.json", "deno.jsonc"),
	at(AtPackage, "node", "node tools (ESLint, Prettier, Babel, Vite, Jest, Vitest, webpack, Tailwind, PostCSS, Next.js)",
		"the tool's next run, and editor extensions on opening a file", "loaded as a module",
		"*.config.js", "*.config.cjs", "*.config.mjs", "*.config.ts", "*.config.cts", "*.config.mts", ".*rc.js", ".*rc.cjs", ".*rc.mjs"),
	at(AtPackage, "node", "node tools (Babel, Jest, and the tools cosmiconfig loads)", "the tool's next run",
		"the plugins, presets and require lists they name are loaded as modules", "*.config.json", "*.config.json5"),
	at(AtPackage, "node", "gulp, Grunt", "gulp, grunt", "the task file is a module (gulp also loads gulpfile.js/ as a directory)",
		"gulpfile.*", "Gulpfile.*", "[Gg]runtfile.*"),
	at(AtRoot, "node", "Nx", "every nx command", "plugins are loaded; targets' commands run", "nx.json"),
	at(InEveryDir, "node", "Nx", "nx run, and Nx Console on opening the folder", "a project's targets run commands (nx:run-commands)", "project.json"),

	// python
	at(AtPackage, "python", "pip, uv, Poetry, Hatch, setuptools", "install and build",
		"a build backend with backend-path runs the tree's own code; setup.py is the build", "pyproject.toml", "setup.py", "setup.cfg"),
	at(AtPackage, "python", "pytest", "every pytest run, and editors' test discovery", "addopts -p loads a plugin module",
		"pytest.ini", ".pytest.ini", "pytest.toml", ".pytest.toml"),
	at(AtPackage, "python", "pip", "pip install -r, and the tools that install from it (uv pip, tox, CI)",
		"--index-url and --extra-index-url choose where packages come from; -e and local paths are built, running their build",
		"requirements*.txt", "requirements/", "constraints*.txt"),
	at(AtPackage, "python", "pdb", "every pdb session and breakpoint() run in the directory", "its lines run as debugger commands; a ! line runs Python", ".pdbrc"),
	at(InEveryDir, "python", "pytest", "every pytest run that collects its directory, and editors' test discovery", "imported as a plugin", "conftest.py"),
	at(AtPackage, "python", "tox, nox, Pipenv", "tox, nox, pipenv run", "their commands and sessions run", "tox.ini", "noxfile.py", "Pipfile"),
	at(AtPackage, "python", "uv, Poetry", "install", "the index packages come from", "uv.toml", "poetry.toml"),
	at(InVenv, "python", "the virtualenv's python", "every start of its python (.venv/bin/python, an editor's interpreter)",
		"a .pth line starting with import is executed; sitecustomize and usercustomize are imported; pyvenv.cfg says what the interpreter loads",
		"pyvenv.cfg", "lib/python*/site-packages/*.pth", "lib/python*/site-packages/sitecustomize.py", "lib/python*/site-packages/usercustomize.py",
		"lib/python*/site-packages/__pycache__/sitecustomize.*", "lib/python*/site-packages/__pycache__/usercustomize.*"),
	at(InVenv, "python", "the virtualenv's python", "every start of its python",
		"the modules its .pth files import: virtualenv's _virtualenv, setuptools' _distutils_hack, editable installs' finders (and those any .pth names, found by reading it)",
		"lib/python*/site-packages/_virtualenv.py", "lib/python*/site-packages/_distutils_hack/", "lib/python*/site-packages/__editable__*"),
	at(InVenv, "python", "the virtualenv's scripts", "running them, and source bin/activate in the user's shell",
		"the interpreter, pip and console scripts themselves", "bin/"),
	at(InVenv, "python", "pip", "pip install in the virtualenv", "index-url: where packages come from", "pip.conf"),

	// rust
	at(AtPackage, "rust", "cargo", "every build and check, which rust-analyzer runs on opening the folder",
		"build scripts and proc-macros are compiled and run on the host", "Cargo.toml", "build.rs"),
	at(AtPackage, "rust", "cargo", "every cargo command, cargo metadata included (rust-analyzer runs it on opening the folder)",
		"build.rustc-wrapper, a target's runner, aliases and [env] run programs", ".cargo/"),
	at(AtPackage, "rust", "rustup", "every cargo and rustc", "selects the toolchain rustup runs; a path toolchain runs that directory's binaries",
		"rust-toolchain", "rust-toolchain.toml"),

	// go
	at(AtPackage, "go", "go", "every go command, and gopls on opening the folder",
		"toolchain makes go download and run another toolchain; replace points modules at local directories", "go.mod", "go.work"),

	// java
	at(AtPackage, "java", "Maven", "every mvn, and IDEs' import on opening the folder",
		"plugins run; .mvn's extensions.xml loads build extensions, its config adds options, its wrapper names the Maven downloaded and run",
		"pom.xml", ".mvn/", "mvnw"),
	at(AtPackage, "java", "Gradle", "every gradle, and IDEs' import on opening the folder",
		"build scripts and buildSrc run at configuration; gradle.properties' jvmargs; the wrapper downloads and runs distributionUrl",
		"build.gradle", "build.gradle.kts", "settings.gradle", "settings.gradle.kts", "gradle.properties", "gradle/wrapper/", "gradlew", "buildSrc/"),

	// ruby
	at(AtPackage, "ruby", "Bundler, Rake", "every bundle command, rake, in the directory or any below it (both search upward)",
		"Ruby evaluated by the tool; .bundle/config picks the Gemfile and gem paths",
		"Gemfile", "gems.rb", "gem.deps.rb", "*.gemspec", "Rakefile", "rakefile", "Rakefile.rb", "rakefile.rb", ".bundle/"),
	at(AtPackage, "ruby", "RSpec", "every rspec run", "--require loads a file before the specs", ".rspec", ".rspec-local"),
	at(AtPackage, "ruby", "irb, Pry", "starting irb or pry in the directory", "Ruby evaluated at start", ".irbrc", "irb.rc", "_irbrc", ".pryrc"),

	// php
	at(AtPackage, "php", "Composer", "install, update, composer run", "scripts run on its events; plugins are loaded", "composer.json"),

	// dotnet
	at(AtPackage, "dotnet", "MSBuild, dotnet, NuGet", "every build and restore, and IDEs' design-time build on opening the folder",
		"targets and tasks run; Directory.Build.* is imported into every project below; global.json picks the SDK; nuget.config the package sources",
		"*.csproj", "*.fsproj", "Directory.Build.props", "Directory.Build.targets", "Directory.Packages.props", "global.json", "nuget.config", "NuGet.Config"),

	// Editors on the host.
	at(AtPackage, "editor", "VS Code (and Cursor, its fork)", "opening the folder",
		"tasks run on folder open; launch configurations; settings that name programs (git.path, terminal profiles, interpreters); recommended extensions; MCP servers",
		".vscode/", "*.code-workspace"),
	at(AtPackage, "editor", "VS Code Dev Containers", "reopening the folder in a container", "initializeCommand runs on the host", ".devcontainer/", ".devcontainer.json"),
	at(AtPackage, "editor", "JetBrains IDEs, Zed", "opening the project", "run configurations, external tools, tasks and the binaries of language servers", ".idea/", ".zed/"),
	at(AtPackage, "editor", "Neovim, Vim (exrc)", "starting in the directory", "executed as configuration", ".nvim.lua", ".nvimrc", ".exrc"),

	// Agents on the host.
	at(AtPackage, "agent", "Claude Code", "starting in the directory",
		"settings' hooks and permissions, commands, subagents, skills; the MCP servers .mcp.json starts once approved", ".claude/", ".mcp.json"),
	at(InEveryDir, "agent", "Claude Code", "every session at or below the directory", "instructions read into its context", "CLAUDE.md", "CLAUDE.local.md"),
	at(InEveryDir, "agent", "Codex, Cursor, Gemini CLI and other agents", "every session that reaches the directory",
		"instructions read into its context", "AGENTS.md", "AGENTS.override.md", "GEMINI.md"),
	at(AtPackage, "agent", "Gemini CLI, Cursor, Codex CLI", "starting in the directory",
		"the MCP servers they start, hooks, tool discovery commands, rules and prompts", ".gemini/", ".cursor/", ".cursorrules", ".codex/"),
	at(AtRoot, "agent", "GitHub Copilot", "every chat in the repository", "instructions, prompts, chat modes and agents added to its prompt",
		".github/copilot-instructions.md", ".github/instructions/", ".github/prompts/", ".github/chatmodes/", ".github/agents/"),
	at(AtPackage, "agent", "aider, Windsurf, Cline, Roo Code, Continue", "starting in the directory",
		"rules read into their context; aider's test-cmd and lint-cmd run; MCP servers they start",
		".aider.conf.yml", ".aider.model.settings.yml", ".windsurfrules", ".windsurf/", ".clinerules", ".roorules", ".roo/", ".continue/"),

	// Shell environments entered on the host.
	at(AtPackage, "shell", "direnv", "entering the directory, once allowed", "a shell script", ".envrc"),
	at(AtPackage, "shell", "mise, asdf", "entering the directory (mise's shell hook), every shim, mise run",
		"tasks, hooks and [env] scripts run; the tool versions it picks are installed and run",
		".tool-versions", "mise*.toml", ".mise*.toml", ".mise/", "mise/config.toml", ".config/mise.toml", ".config/mise/"),
	at(AtPackage, "shell", "Nix", "nix develop, nix-shell, nix-build, and direnv's use flake and use nix",
		"shellHook runs in the user's shell; nix-shell reads default.nix when there is no shell.nix", "flake.nix", "shell.nix", "default.nix", "devenv.nix"),
	at(AtPackage, "shell", "Devbox", "devbox shell, devbox run", "init_hook and scripts run in the user's shell", "devbox.json"),
	at(AtPackage, "shell", "Bun, pipenv, docker compose, Vite, Next.js, Flask (dotenv)", "bun run, pipenv run, docker compose, the dev servers",
		"loaded into the environment of what they run: LD_PRELOAD, NODE_OPTIONS, COMPOSE_FILE, FLASK_APP run the agent's code; masked by default, so recorded, never read",
		".env", ".env.*", ".flaskenv"),
	at(AtPackage, "shell", "tools that keep their configuration in .config/ (cargo-nextest, dotnet tool, lefthook, mise, the cosmiconfig tools)",
		"the tool's next run", "nextest's setup scripts run commands; dotnet-tools.json names the tools dotnet tool restore installs and runs", ".config/"),

	// Infrastructure tools run on the host.
	at(AtPackage, "infra", "Docker Compose", "docker compose up, run, build (which searches upward for its file)",
		"services run with the privileges and mounts it names — a privileged one with / mounted is root on the host; build contexts and hooks",
		"compose.yaml", "compose.yml", "compose.override.yaml", "compose.override.yml",
		"docker-compose.yaml", "docker-compose.yml", "docker-compose.override.yaml", "docker-compose.override.yml"),
	at(AtPackage, "infra", "Vagrant", "every vagrant command (which searches upward for its file)", "Ruby evaluated by vagrant; provisioners run", "Vagrantfile"),
	at(InEveryDir, "infra", "Terraform, OpenTofu", "terraform plan and apply in the directory, or a module it uses",
		"an external data source runs its program at plan; local-exec provisioners at apply; providers are downloaded and run",
		"*.tf", "*.tf.json", "*.tofu", "*.tofu.json"),
	at(AtPackage, "infra", "Tilt, Skaffold", "tilt up, skaffold dev and run", "local() and build hooks run commands on the host", "Tiltfile", "skaffold.yaml"),

	// abox's own definition.
	at(AtRoot, "abox", "abox", "abox run", "the sandbox's own definition: abox refuses a changed one until abox up approves it", "agentbox.yaml"),

	// Last, so that a tool's own entry names its file first: the rc files node tools load with
	// cosmiconfig and lilconfig (.babelrc, .prettierrc.json, .mocharc.yml, .lintstagedrc), in
	// every format they accept, whose plugins, presets and require lists are modules.
	at(AtPackage, "node", "node tools (Babel, Prettier, Mocha, lint-staged, stylelint, and the others cosmiconfig loads)",
		"the tool's next run, a commit (lint-staged), and editor extensions on opening a file", "the modules they name are loaded; lint-staged's commands run",
		".*rc", ".*rc.json", ".*rc.json5", ".*rc.jsonc", ".*rc.yaml", ".*rc.yml", ".*rc.toml", ".*rc.ts", ".*rc.cts", ".*rc.mts"),
)

// at returns one entry per pattern, all with the same reasons.
func at(reach Reach, class, tool, when, why string, patterns ...string) []CatalogEntry {
	out := make([]CatalogEntry, len(patterns))
	for i, p := range patterns {
		out[i] = CatalogEntry{Pattern: p, Reach: reach, Class: class, Tool: tool, When: when, Why: why}
	}
	return out
}

func join(groups ...[]CatalogEntry) []CatalogEntry {
	var out []CatalogEntry
	for _, g := range groups {
		out = append(out, g...)
	}
	return out
}
