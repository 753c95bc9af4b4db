# Slim image running `gateway serve`; configure it with GATEWAY_* variables (docs/configuration.md).
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY gateway ./gateway
COPY filters ./filters
COPY factory_format ./factory_format
RUN pip install --no-cache-dir --prefix=/install .

FROM python:3.11-slim
RUN useradd --create-home --uid 10001 gateway
COPY --from=build /install /usr/local
RUN mkdir -p /home/gateway/data && chown gateway:gateway /home/gateway/data
USER gateway
WORKDIR /home/gateway
ENV GATEWAY_DATABASE_URL=sqlite:////home/gateway/data/gateway.db
VOLUME /home/gateway/data
EXPOSE 8000
# liveness: the process answers (GET /readyz says whether it can do its work)
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
    CMD python -c "import urllib.request as u; u.urlopen('http://127.0.0.1:8000/healthz', timeout=2)"
CMD ["gateway", "serve", "--host", "0.0.0.0", "--port", "8000"]
