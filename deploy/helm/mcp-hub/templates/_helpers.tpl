{{/*
Names, labels and the pieces the hub Deployment and the migration Job share.
*/}}

{{/* The chart name, or nameOverride. */}}
{{- define "mcp-hub.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* RELEASE-mcp-hub (or just RELEASE when it already holds the name), or fullnameOverride. */}}
{{- define "mcp-hub.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* chart label: name-version */}}
{{- define "mcp-hub.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels of every object. */}}
{{- define "mcp-hub.labels" -}}
helm.sh/chart: {{ include "mcp-hub.chart" . }}
app.kubernetes.io/name: {{ include "mcp-hub.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* Selector of the serving pods (the migration Job's pods carry component=migrate instead). */}}
{{- define "mcp-hub.selectorLabels" -}}
app.kubernetes.io/name: {{ include "mcp-hub.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: server
{{- end }}

{{/* repository:tag, the tag defaulting to the chart's appVersion. */}}
{{- define "mcp-hub.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/* The Secret the replicas read. */}}
{{- define "mcp-hub.secretName" -}}
{{- default (include "mcp-hub.fullname" .) .Values.secrets.existingSecret }}
{{- end }}

{{/* The Secret the migration Job reads: the existing one, or the chart's hook Secret. */}}
{{- define "mcp-hub.migrationSecretName" -}}
{{- if .Values.secrets.existingSecret }}
{{- .Values.secrets.existingSecret }}
{{- else }}
{{- printf "%s-migration" (include "mcp-hub.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{/* The key of the migration Job's HUB_DATABASE_URL in its Secret. */}}
{{- define "mcp-hub.migrationUrlKey" -}}
{{- if and .Values.secrets.existingSecret .Values.migration.separateDatabaseUrl }}
{{- "migration-database-url" }}
{{- else }}
{{- "database-url" }}
{{- end }}
{{- end }}

{{/*
Non-secret settings: config without empty values. Rendering fails when a secret or a setting the
chart owns was put there, so a keyring never lands in a ConfigMap.
*/}}
{{- define "mcp-hub.config" -}}
{{- $refused := list "HUB_DATABASE_URL" "HUB_DATABASE_OWNER_URL" "HUB_DATABASE_APP_ROLE" "HUB_ENCRYPTION_KEYS" "HUB_ACTIVE_KEY_ID" "HUB_API_KEY_PEPPER" "HUB_HOST" "HUB_PORT" }}
{{- range $key, $value := .Values.config }}
{{- if has $key $refused }}
{{- fail (printf "config.%s is not allowed: secrets go in secrets.* (or secrets.existingSecret); HUB_HOST/HUB_PORT come from containerPort" $key) }}
{{- end }}
{{- if not (hasPrefix "HUB_" $key) }}
{{- fail (printf "config.%s: settings are HUB_ environment variables" $key) }}
{{- end }}
{{- if ne (toString $value) "" }}
{{ $key }}: {{ toString $value | quote }}
{{- end }}
{{- end }}
{{- end }}

{{/* The environment both the replicas and the Job get from a Secret ($secret) and a URL key. */}}
{{- define "mcp-hub.secretEnv" -}}
- name: HUB_DATABASE_URL
  valueFrom:
    secretKeyRef:
      name: {{ .secret }}
      key: {{ .urlKey }}
- name: HUB_ENCRYPTION_KEYS
  valueFrom:
    secretKeyRef:
      name: {{ .secret }}
      key: encryption-keys
- name: HUB_ACTIVE_KEY_ID
  valueFrom:
    secretKeyRef:
      name: {{ .secret }}
      key: active-key-id
      optional: true
- name: HUB_API_KEY_PEPPER
  valueFrom:
    secretKeyRef:
      name: {{ .secret }}
      key: api-key-pepper
{{- end }}

{{/* True when the chart makes the Secret and a required secret value is missing. */}}
{{- define "mcp-hub.secretsMissing" -}}
{{- if and (not .Values.secrets.existingSecret) (not (and .Values.secrets.databaseUrl .Values.secrets.encryptionKeys .Values.secrets.apiKeyPepper)) }}true{{ end }}
{{- end }}
