# Harmonic: `docker build -t harmonic .`, then `harmonic run ...` (second scheduler) or
# `harmonic extender ...` (kube-scheduler extender); see charts/harmonic and deploy/.
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md requirements.lock ./
COPY harmonic ./harmonic
RUN pip wheel --no-cache-dir --wheel-dir /wheels -c requirements.lock .

FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir --no-compile /wheels/*.whl && rm -rf /wheels \
    && groupadd --gid 65532 harmonic && useradd --uid 65532 --gid 65532 --no-create-home harmonic
USER 65532:65532
EXPOSE 8888 10259
ENTRYPOINT ["harmonic"]
CMD ["--help"]
