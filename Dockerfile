# syntax=docker/dockerfile:1
# The host's image: the `openwop-a2a-host` CLI, as the package ships it. Bring your agent without rebuilding:
#
#   docker run -p 8080:8080 -v "$PWD/my-agent:/agent:ro" \
#     -e WORKFLOWS_DIR=/agent/workflows -e HANDLERS_MODULE=/agent/handlers.js \
#     -e AGENT_NAME="My agent" -e MONGODB_URI=... -e PUBLIC_URL=... (and the production secrets) openwop-a2a-host
#
# HANDLERS_MODULE may be plain JavaScript or TypeScript that Node runs as it is (type stripping, Node 24).
# Inside it, `import { HandlerError } from "openwop-a2a-host"` resolves to this image's package.

# Build stage: all dependencies, then compile TypeScript (and copy the console's assets into the build).
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --workspaces=false --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY scripts ./scripts
COPY src ./src
RUN npm run build

# Runtime stage: production dependencies, the build, the built-in workflows and schemas; a non-root user.
FROM node:24-bookworm-slim
ENV NODE_ENV=production HOST=0.0.0.0 PORT=8080
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --workspaces=false --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist/src ./dist/src
COPY workflows ./workflows
COPY schemas ./schemas
# The variables' table: the host reads it to warn about a misspelled variable (PUSH_ENABLE for PUSH_ENABLED).
COPY docs/configuration.md ./docs/configuration.md
# The CLI on the PATH, and the package where modules outside /app (your /agent) find it by name.
RUN chmod +x dist/src/main.js && ln -s /app/dist/src/main.js /usr/local/bin/openwop-a2a-host \
  && mkdir -p /node_modules && ln -s /app /node_modules/openwop-a2a-host \
  && mkdir -p /app/data && chown node /app/data
USER node
EXPOSE 8080
# Liveness: the process answers HTTP (no curl in the slim image, so Node's fetch). Readiness is /readyz
# (store reachable, not draining), for load balancers and Kubernetes readinessProbe.
HEALTHCHECK --interval=15s --timeout=3s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# NODE_ENV=production refuses to start without MONGODB_URI and PUBLIC_URL, and (push on by default) without
# PUSH_ENCRYPTION_KEY and PUSH_SIGNING_KEY (PUSH_ENABLED=false turns push off), and (A2A_PEER_PUSH on by
# default) without A2A_PEER_CALLBACK_KEY.
CMD ["openwop-a2a-host"]
