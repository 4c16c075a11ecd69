# syntax=docker/dockerfile:1
# A static locknode binary on a small base image, run as a non-root user.
#   docker build -t locknode .
#   docker run -v locknode-data:/data \
#     -v "$PWD/deploy/users.acl:/etc/locknode/users.acl:ro" -e LOCKNODE_USERS=/etc/locknode/users.acl \
#     -e LOCKNODE_INSECURE_PEER=true -p 127.0.0.1:8080:8080 -p 127.0.0.1:6379:6379 locknode
# deploy/users.acl is made from deploy/users.acl.example (docs/running.md).
# The single node's peer port runs without TLS on the container's
# loopback, which nothing outside the container reaches; serve asks for
# LOCKNODE_INSECURE_PEER beside a users file to be told so. Publish the
# ports beyond 127.0.0.1 only with LOCKNODE_TLS_CERT and LOCKNODE_TLS_KEY.
FROM golang:1.26 AS build
WORKDIR /src
# The module files and the raft fork go.mod replaces raft with, so the
# dependencies download in a layer of their own, reused while they stay.
COPY go.mod go.sum ./
COPY third_party/raft ./third_party/raft
RUN go mod download
COPY . .
ARG VERSION=dev
ARG COMMIT=unknown
RUN CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w -X main.linkVersion=${VERSION} -X main.linkCommit=${COMMIT}" \
      -o /out/locknode ./cmd/locknode

# Alpine rather than scratch: the health check needs wget.
FROM alpine:3.20
RUN addgroup -S -g 10001 locknode && adduser -S -u 10001 -G locknode locknode \
    && mkdir /data && chown locknode:locknode /data
COPY --from=build /out/locknode /usr/local/bin/locknode
USER locknode
VOLUME /data
# A single node by default; docker-compose.yml and the Kubernetes example
# set the id, peers and addresses of a real cluster. A single node needs
# no peer port beyond the container, so it listens on loopback: serve
# refuses a peer port beyond loopback without peer TLS (--peer-tls-*) or
# an explicit LOCKNODE_INSECURE_PEER=true (see "Securing a cluster").
ENV LOCKNODE_ID=n1 \
    LOCKNODE_DATA=/data \
    LOCKNODE_BOOTSTRAP=true \
    LOCKNODE_RAFT_ADDR=127.0.0.1:7000 \
    LOCKNODE_ADVERTISE=127.0.0.1:7000 \
    LOCKNODE_HTTP_ADDR=0.0.0.0:8080 \
    LOCKNODE_RESP_ADDR=0.0.0.0:6379
# 7000 is the peer port of a cluster (with LOCKNODE_RAFT_ADDR=0.0.0.0:7000).
EXPOSE 7000 8080 6379
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s \
    CMD wget -q -O /dev/null http://127.0.0.1:8080/readyz || exit 1
ENTRYPOINT ["/usr/local/bin/locknode", "serve"]
