# syntax=docker/dockerfile:1
# Build stage: install all dependencies and compile TypeScript.
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build

# Runtime stage: production dependencies, compiled code, workflows and schemas; runs as a non-root user.
FROM node:24-bookworm-slim
ENV NODE_ENV=production HOST=0.0.0.0 PORT=8080
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist ./dist
COPY workflows ./workflows
COPY schemas ./schemas
# The operator console's page and scripts, served as they are (no build step).
COPY src/transport/console/assets ./src/transport/console/assets
USER node
EXPOSE 8080
# Liveness: the process answers HTTP (no curl in the slim image, so Node's fetch). Readiness is /readyz
# (store reachable, not draining), for load balancers and Kubernetes readinessProbe.
HEALTHCHECK --interval=15s --timeout=3s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# NODE_ENV=production refuses to start without MONGODB_URI and PUBLIC_URL, and (push on by default) without
# PUSH_ENCRYPTION_KEY and PUSH_SIGNING_KEY; PUSH_ENABLED=false turns push off.
CMD ["node", "dist/src/main.js"]
