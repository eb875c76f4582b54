// OpenAPI docs, served by the app itself (no CDN); the spec needs the same login as the pages.
// "Try it out" from a logged-in browser sends the session's CSRF token like the pages do.
window.addEventListener("DOMContentLoaded", () => {
  const meta = document.querySelector('meta[name="csrf-token"]');
  window.SwaggerUIBundle({
    url: "/api/v1/openapi.json", dom_id: "#swagger-ui", deepLinking: true,
    requestInterceptor: (req) => { if (meta) req.headers["X-CSRF-Token"] = meta.content; return req; },
  });
});
