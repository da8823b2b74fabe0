# syntax=docker/dockerfile:1
# Rill's container image: a build stage with the Rust toolchain and RocksDB's C++ build
# needs, and a small Debian runtime that runs `rill` as an unprivileged user.
#
#   docker build -t rill:dev .
#   docker run --rm -p 8080:8080 -p 26500:26500 -p 9600:9600 rill:dev   # rill standalone
#
# The runtime keeps /bin/sh: the Helm chart's broker start script derives the node id
# from the pod's ordinal with it.

ARG RUST_VERSION=1.95.0
ARG DEBIAN_RELEASE=bookworm

FROM rust:${RUST_VERSION}-slim-${DEBIAN_RELEASE} AS build
ARG RUST_VERSION
# rust-toolchain.toml asks for rustfmt and clippy too; the image's toolchain is the same
# release, and naming it here keeps rustup from fetching components a build never uses.
ENV RUSTUP_TOOLCHAIN=${RUST_VERSION} \
    CARGO_TERM_COLOR=never
# Package versions follow the pinned Debian release of the base image.
# hadolint ignore=DL3008
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      clang libclang-dev g++ make pkg-config \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# The caches keep crates and RocksDB's objects between builds; the binary is copied out
# of the cached target directory before the step ends.
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/usr/local/cargo/git \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked -p rill \
 && install -D -m 0755 target/release/rill /out/rill

FROM debian:${DEBIAN_RELEASE}-slim AS runtime
# tini reaps zombies and forwards SIGTERM, so `rill` shuts down gracefully as PID 1's child.
# hadolint ignore=DL3008
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends tini \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --gid 1000 rill \
 && useradd --uid 1000 --gid 1000 --home-dir /usr/local/rill --no-create-home \
      --shell /usr/sbin/nologin rill \
 && mkdir -p /usr/local/rill/data \
 && chown -R 1000:1000 /usr/local/rill
COPY --from=build /out/rill /usr/local/bin/rill
WORKDIR /usr/local/rill
ENV RILL_DATA__DIRECTORY=/usr/local/rill/data
USER 1000:1000
VOLUME ["/usr/local/rill/data"]
# gateway REST, gateway gRPC, command API, internal (raft), monitoring
EXPOSE 8080 26500 26501 26502 9600
ENTRYPOINT ["/usr/bin/tini", "--", "/usr/local/bin/rill"]
CMD ["standalone"]
