# hitch serve in a container: a static binary on an empty base, run as a
# user without privileges. Build: docker build -t hitch .
# See compose.yaml for hitch serve with PostgreSQL.

FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
ARG COMMIT=
ARG BUILD_TIME=
RUN CGO_ENABLED=0 go build -trimpath -tags timetzdata \
      -ldflags "-s -w -X main.version=${VERSION} -X main.commit=${COMMIT} -X main.buildTime=${BUILD_TIME}" \
      -o /out/hitch ./cmd/hitch \
 && mkdir -p /out/data /out/tmp && chmod 1777 /out/tmp

FROM scratch
# Root certificates, for model providers over HTTPS.
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/
COPY --from=build /out/hitch /hitch
COPY --from=build --chown=65532:65532 /out/data /data
COPY --from=build /out/tmp /tmp
USER 65532:65532
ENV HOME=/data TMPDIR=/tmp
WORKDIR /data
EXPOSE 7077
ENTRYPOINT ["/hitch"]
CMD ["serve", "--config", "/etc/hitch/hitch.yaml", "--addr", "0.0.0.0:7077"]
