// Package deploy holds no runtime code: its tests validate the deployment artefacts — docker-compose.yml at the
// repository root, deploy/docker/Dockerfile, the kustomize base and overlays under deploy/k8s and the OpenTelemetry
// collector configuration — against README's and docs/CONFIGURATION.md's defaults and the Kubernetes API types, since no Docker engine or
// cluster is needed to catch most deployment mistakes.
package deploy
