# syntax=docker/dockerfile:1
# The host's image: the `openwop-a2a-host` CLI, the package as npm installs it. Published for linux/amd64 and
# linux/arm64 as ghcr.io/openwop/openwop-a2a-host:<version> (.github/workflows/release.yml). Bring your agent
# without rebuilding:
#
#   docker run -p 8080:8080 -v "$PWD/my-agent:/agent:ro" \
#     -e WORKFLOWS_DIR=/agent/workflows -e HANDLERS_MODULE=/agent/handlers.js \
#     -e AGENT_NAME="My agent" -e MONGODB_URI=... -e PUBLIC_URL=... --env-file keys.env ghcr.io/openwop/openwop-a2a-host
#
# The arguments are the CLI's: `docker run --rm ghcr.io/openwop/openwop-a2a-host keys > keys.env` prints fresh
# production keys, `... check` checks a configuration. HANDLERS_MODULE may be plain JavaScript or TypeScript that
# Node runs as it is (type stripping). Inside it, `import { HandlerError } from "openwop-a2a-host"` resolves to
# this image's package.

# The current Node LTS. The release workflow smoke-tests the image it builds before publishing it.
ARG NODE_IMAGE=node:26-trixie-slim

# Build stage: all dependencies, compile, then `npm pack` (prepack builds): the tarball npm would publish, holding
# package.json's "files" (less deploy/, which an image has no use for).
FROM ${NODE_IMAGE} AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --workspaces=false --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json README.md ./
COPY scripts ./scripts
COPY src ./src
COPY workflows ./workflows
COPY schemas ./schemas
COPY docs ./docs
COPY templates ./templates
RUN mkdir /pkg && npm pack --pack-destination /pkg && mv /pkg/openwop-a2a-host-*.tgz /pkg/openwop-a2a-host.tgz

# Runtime stage: the production dependencies at the lock file's versions, the packed package over them, an init
# process, a non-root user.
FROM ${NODE_IMAGE}
ARG VERSION=0.0.0-dev
ARG REVISION=unknown
ARG CREATED=unknown
LABEL org.opencontainers.image.title="openwop-a2a-host" \
      org.opencontainers.image.description="A durable A2A task host: OpenWOP workflows exposed as an A2A agent over gRPC, Connect, gRPC-Web, JSON-RPC+SSE and HTTP+JSON." \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.source="https://github.com/openwop/openwop-a2a-host" \
      org.opencontainers.image.documentation="https://github.com/openwop/openwop-a2a-host/blob/main/docs/operating.md" \
      org.opencontainers.image.vendor="OpenWOP" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}"
# tini is PID 1: it forwards SIGTERM to Node (the CLI drains on it) and reaps the zombies of any process a handler
# starts, which Node as PID 1 would leave behind.
RUN apt-get update \
  && apt-get install -y --no-install-recommends tini \
  && rm -rf /var/lib/apt/lists/*
ENV NODE_ENV=production HOST=0.0.0.0 PORT=8080
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --workspaces=false --no-audit --no-fund && npm cache clean --force
COPY --from=build /pkg/openwop-a2a-host.tgz /tmp/openwop-a2a-host.tgz
# The CLI on the PATH, and the package where modules outside /app (your /agent) find it by name. DATA_DIR (./data)
# is writable by the user; a read-only root filesystem mounts a volume there (deploy/kubernetes uses an emptyDir).
RUN tar -xzf /tmp/openwop-a2a-host.tgz --strip-components=1 --no-same-owner -C /app && rm /tmp/openwop-a2a-host.tgz \
  && chmod +x dist/src/main.js && ln -s /app/dist/src/main.js /usr/local/bin/openwop-a2a-host \
  && mkdir -p /node_modules && ln -s /app /node_modules/openwop-a2a-host \
  && mkdir -p /app/data && chown 1000:1000 /app/data
# The image's `node` user, by number, so Kubernetes' runAsNonRoot can check it.
USER 1000:1000
EXPOSE 8080
# Liveness: the process answers HTTP (no curl in the slim image, so Node's fetch). Readiness is /readyz
# (store reachable, not draining), for load balancers and Kubernetes readinessProbe.
HEALTHCHECK --interval=15s --timeout=3s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# NODE_ENV=production refuses to start without MONGODB_URI, PUBLIC_URL, a way in (API_KEYS, ...) and the keys
# `openwop-a2a-host keys` prints; each secret may come from a file instead (<NAME>_FILE, docs/configuration.md).
ENTRYPOINT ["/usr/bin/tini", "--", "openwop-a2a-host"]
CMD ["start"]
