# Slim image running `gateway serve`; configure it with GATEWAY_* variables (docs/configuration.md).
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY gateway ./gateway
COPY filters ./filters
RUN pip install --no-cache-dir --prefix=/install .

FROM python:3.11-slim
RUN useradd --create-home --uid 10001 gateway
COPY --from=build /install /usr/local
USER gateway
WORKDIR /home/gateway
ENV GATEWAY_DATABASE_URL=sqlite:////home/gateway/data/gateway.db
EXPOSE 8000
CMD ["gateway", "serve", "--host", "0.0.0.0", "--port", "8000"]
