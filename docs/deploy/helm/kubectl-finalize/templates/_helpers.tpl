{{/* The chart's name. */}}
{{- define "kubectl-finalize.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The release's fullname: the name of every object it makes. */}}
{{- define "kubectl-finalize.fullname" -}}
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

{{- define "kubectl-finalize.selectorLabels" -}}
app.kubernetes.io/name: {{ include "kubectl-finalize.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "kubectl-finalize.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "kubectl-finalize.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | trunc 63 | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "kubectl-finalize.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "kubectl-finalize.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* repository:tag, or repository:tag@digest when a digest is given. */}}
{{- define "kubectl-finalize.image" -}}
{{- $tag := .Values.image.tag | default .Chart.AppVersion }}
{{- if .Values.image.digest }}
{{- printf "%s:%s@%s" .Values.image.repository $tag .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository $tag }}
{{- end }}
{{- end }}

{{/* The ConfigMap that holds the policy. */}}
{{- define "kubectl-finalize.policyConfigMap" -}}
{{- if and .Values.policy.content .Values.policy.existingConfigMap }}
{{- fail "set one of policy.content and policy.existingConfigMap, not both" }}
{{- end }}
{{- if .Values.policy.existingConfigMap }}
{{- .Values.policy.existingConfigMap }}
{{- else if .Values.policy.content }}
{{- printf "%s-policy" (include "kubectl-finalize.fullname" .) }}
{{- else }}
{{- fail "no policy: pass one with --set-file policy.content=policy.yaml, or name an existing ConfigMap with policy.existingConfigMap" }}
{{- end }}
{{- end }}

{{/* The policy's argument. */}}
{{- define "kubectl-finalize.policyArg" -}}
- --policy=/etc/kubectl-finalize/{{ .Values.policy.key }}
{{- end }}

{{/* The pod both shapes run: args is the list of reconcile's arguments. */}}
{{- define "kubectl-finalize.podSpec" -}}
{{- $ := .root -}}
serviceAccountName: {{ include "kubectl-finalize.serviceAccountName" $ }}
{{- with $.Values.imagePullSecrets }}
imagePullSecrets:
{{- toYaml . | nindent 2 }}
{{- end }}
{{- with $.Values.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
securityContext:
{{- toYaml $.Values.podSecurityContext | nindent 2 }}
{{- with $.Values.nodeSelector }}
nodeSelector:
{{- toYaml . | nindent 2 }}
{{- end }}
{{- with $.Values.tolerations }}
tolerations:
{{- toYaml . | nindent 2 }}
{{- end }}
{{- with $.Values.affinity }}
affinity:
{{- toYaml . | nindent 2 }}
{{- end }}
{{- with .extraPod }}
{{ . }}
{{- end }}
containers:
- name: reconcile
  image: {{ include "kubectl-finalize.image" $ }}
  imagePullPolicy: {{ $.Values.image.pullPolicy }}
  args:
  {{- .args | nindent 2 }}
  {{- range $.Values.extraArgs }}
  - {{ . | quote }}
  {{- end }}
  {{- if or .env $.Values.credentials.env }}
  env:
  {{- with .env }}
  {{- . | nindent 2 }}
  {{- end }}
  {{- range $.Values.credentials.env }}
  - name: {{ .name }}
    valueFrom:
      secretKeyRef:
        name: {{ .secretName }}
        key: {{ .key }}
        {{- if hasKey . "optional" }}
        optional: {{ .optional }}
        {{- end }}
  {{- end }}
  {{- end }}
  {{- with .container }}
  {{- . | nindent 2 }}
  {{- end }}
  securityContext:
  {{- toYaml $.Values.securityContext | nindent 4 }}
  resources:
  {{- toYaml $.Values.resources | nindent 4 }}
  volumeMounts:
  - name: policy
    mountPath: /etc/kubectl-finalize
    readOnly: true
  {{- range $i, $f := $.Values.credentials.files }}
  - name: credentials-{{ $i }}
    mountPath: {{ $f.mountPath }}
    readOnly: true
  {{- end }}
  {{- with .mounts }}
  {{- . | nindent 2 }}
  {{- end }}
volumes:
- name: policy
  configMap:
    name: {{ include "kubectl-finalize.policyConfigMap" $ }}
{{- range $i, $f := $.Values.credentials.files }}
- name: credentials-{{ $i }}
  secret:
    secretName: {{ $f.secretName }}
    {{- if hasKey $f "optional" }}
    optional: {{ $f.optional }}
    {{- end }}
    {{- with $f.items }}
    items:
    {{- toYaml . | nindent 4 }}
    {{- end }}
{{- end }}
{{- with .volumes }}
{{ . }}
{{- end }}
{{- end }}
