# The coordinator image. docker-compose.yml runs it against PostgreSQL. It listens on all addresses,
# so it needs FLORETE_TLS_CERT and FLORETE_TLS_KEY, or FLORETE_TLS=proxy behind a TLS proxy, to start.
# Built and run on Node.js 26, the current Active LTS, on which the whole test suite runs.
FROM node:26-trixie-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run build && npm prune --omit=dev

FROM node:26-trixie-slim
# xz and zstd read the control archive of pushed packages (dpkg-deb's default, and Ubuntu's).
RUN apt-get update && apt-get install -y --no-install-recommends xz-utils zstd && rm -rf /var/lib/apt/lists/*
WORKDIR /app
ENV NODE_ENV=production HOST=0.0.0.0 PORT=8080 FLORETE_DATA=/data
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
RUN mkdir /data /keys && chown node:node /data /keys
VOLUME /data
EXPOSE 8080
USER node
CMD ["node", "dist/apps/coordinator/src/main.js", "serve"]
