package picture

// TextWidth is textWidth, for the tests of the layout.
var TextWidth = textWidth
