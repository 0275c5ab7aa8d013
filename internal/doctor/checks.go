package doctor

// All lists the checks of a full audit, in report order: the host, the manifest and its
// servers, the gateway, the artifacts, netd, the agent, egress, the workspace, then the
// boundary subset. It is an explicit list: a check exists because it is written here.
func All() []Check {
	checks := []Check{
		{"host.docker", "docker cli", hostDocker},
		{"host.docker-daemon", "docker daemon", hostDockerDaemon},
		{"host.network", "abox network", hostNetwork},

		{"manifest.schema", "manifest valid", manifestSchema},
		{"manifest.approved", "manifest approved", manifestApproved},
		{"servers.declared", "declared servers known", serversDeclared},
		{"servers.pinned", "server images pinned", serversPinned},
		{"servers.network", "server isolation rendered", serversNetwork},
		{"secrets.store", "secrets store", secretsStore},
		{"secrets.present", "required secrets in the store", secretsPresent},
		{"secrets.fresh", "secret sources match the store", secretsFresh},
		{"secrets.sources", "secret sources out of the agent's reach", secretsSources},

		{"gateway.image-pinned", "gateway image pinned", gatewayImagePinned},
		{"gateway.image-digest", "gateway runs the pinned digest", gatewayImageDigest},
		{"gateway.running", "gateway running", gatewayRunning},
		{"gateway.no-published-ports", "gateway publishes no ports", gatewayNoPublishedPorts},
		{"gateway.verify-signatures", "gateway verifies signatures and tokens", gatewayVerifySignatures},
		{"gateway.project-scope", "mcp tools limited to the project", gatewayProjectScope},
		{"gateway.servers-ended", "no mcp server outlives its run", gatewayServersEnded},

		{"artifacts.rendered", "artifacts rendered", artifactsRendered},
		{"artifacts.integrity", "artifacts match artifacts.json", artifactsIntegrity},
		{"artifacts.current", "artifacts current", artifactsCurrent},
		{"artifacts.review-copy", "review copy", artifactsReviewCopy},
		{"artifacts.masks", "masked paths", artifactsMasks},

		{"netd.image", "netd image", netdImage},
		{"netd.policy", "network policy", netdPolicyCheck},
		{"netd.capabilities", "netd capabilities", netdCapabilities},
		{"netd.privileged-ports", "ports below 1024 privileged in netd's namespace", netdPrivilegedPorts},
		{"netd.retired", "finished netds removed", netdRetired},
		{"sandbox.orphans", "no sandbox without its abox", sandboxOrphans},

		{"agent.image", "agent image", agentImage},
		{"images.base-pinned", "base image pinned", imagesBasePinned},
		{"agent.no-docker-sock", "agent has no docker socket", agentNoDockerSock},
		{"agent.no-published-ports", "agent publishes no ports", agentNoPublishedPorts},
		{"agent.not-privileged", "agent not privileged", agentNotPrivileged},
		{"agent.capabilities", "agent capabilities", agentCapabilities},
		{"agent.no-new-privileges", "agent no-new-privileges", agentNoNewPrivileges},
		{"agent.user", "agent user", agentUser},
		{"agent.network", "agent network namespace", agentNetwork},
		{"agent.runtime", "agent runtime", agentRuntime},
		{"agent.mounts", "agent mounts", agentMounts},
		{"agent.single-mcp-endpoint", "mcp endpoints", agentSingleMCPEndpoint},
		{"agent.mcp-forwarder", "mcp through netd's forwarder", agentMCPForwarder},
		{"agent.claude-settings", "claude settings fixed by abox", agentClaudeSettings},
		{"agent.claude-version", "claude code version current", agentClaudeVersion},
		{"agent.env-secrets", "secrets in the agent's environment", agentEnvSecrets},
		{"agent.auth-credential", "claude credential volume", agentAuthCredential},
		{"agent.login-check", "login check confined", agentLoginCheck},

		{"egress.mandatory", "mandatory egress hosts", egressMandatory},
		{"egress.queue", "egress review queue", egressQueue},
		{"egress.refused", "connections refused by sni or host", egressRefused},
		{"egress.log-caps", "decision logs within netd's bounds", egressLogCaps},

		{"git.tamper", "git config and hooks", gitTamper},
		{"workspace.exec-surface", "execution-adjacent files", execSurface},
		{"workspace.masks-intact", "masks held through the runs", masksIntact},
		{"workspace.agent-can-write", "the agent can write the workspace", agentCanWrite},
		{"workspace.isolated-runs", "isolated runs pending review", isolatedRuns},
	}
	return append(checks, BoundaryChecks()...)
}
