// The "Contents" button of narrow windows (below 1200 px). pydata-sphinx-theme opens its
// contents dialog from the first `.secondary-toggle` of the page only: its own navbar button,
// which sphinx-book-theme hides and replaces by a button in the article header. That visible
// button got no handler and did nothing; it now passes its clicks on to the one that has it.
document.addEventListener("DOMContentLoaded", () => {
  const [handled, ...unhandled] = document.querySelectorAll(".secondary-toggle");
  unhandled.forEach((button) =>
    button.addEventListener("click", (event) => {
      event.preventDefault();
      event.stopPropagation();
      handled.click();
    }),
  );
});
