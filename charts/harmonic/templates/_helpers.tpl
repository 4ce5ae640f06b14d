{{- define "harmonic.name" -}}
harmonic-{{ .Values.mode }}
{{- end }}

{{- define "harmonic.labels" -}}
app.kubernetes.io/name: harmonic
app.kubernetes.io/instance: {{ include "harmonic.name" . }}
app.kubernetes.io/component: {{ .Values.mode }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end }}

{{- define "harmonic.selector" -}}
app.kubernetes.io/name: harmonic
app.kubernetes.io/instance: {{ include "harmonic.name" . }}
{{- end }}

{{- define "harmonic.scheme" -}}
{{- if .Values.extender.tls.secretName }}HTTPS{{ else }}HTTP{{ end }}
{{- end }}
