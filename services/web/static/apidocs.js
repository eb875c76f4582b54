// OpenAPI docs, served by the app itself (no CDN); the spec needs the same login as the pages.
window.addEventListener("DOMContentLoaded", () => {
  window.SwaggerUIBundle({ url: "/api/v1/openapi.json", dom_id: "#swagger-ui", deepLinking: true });
});
