{{/* The namespace of the plugins' objects: .Values.namespace, else the release's. */}}
{{- define "gpuslice.namespace" -}}
{{ .Values.namespace | default .Release.Namespace }}
{{- end -}}

{{/* The image, its tag the chart's appVersion unless .Values.image.tag says. */}}
{{- define "gpuslice.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{/* The resource.k8s.io version of the DeviceClasses: the plugin's when it is told v1beta2. */}}
{{- define "gpuslice.resourceApi" -}}
{{- if eq .Values.draPlugin.apiVersion "v1beta2" -}}
resource.k8s.io/v1beta2
{{- else -}}
resource.k8s.io/v1
{{- end -}}
{{- end -}}
